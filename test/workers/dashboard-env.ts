// Dashboard test worker: prints where the launcher told it to write metrics, and its arguments.
console.log(
  JSON.stringify({ metricsFile: process.env.TSDDP_METRICS_FILE ?? null, argv: process.argv.slice(2) }),
);
