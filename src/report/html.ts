// The report page: one HTML file with its styles inline, next to the PNG charts it shows,
// so the folder can be opened, copied or attached as it is.

import type { SummaryRow } from './summary.ts';
import { esc } from './svg.ts';

export interface PageChart {
  /** File name, relative to the page. */
  file: string;
  title: string;
  caption: string;
}

export interface Page {
  metricsFile: string;
  rows: SummaryRow[];
  resumes: Array<{ step: number; checkpoint: string }>;
  charts: PageChart[];
  /** Sections without a chart, and why (e.g. no DDP communication recorded). */
  notes: Array<{ title: string; text: string }>;
}

const STYLE = `
body { font-family: 'DejaVu Sans', Arial, sans-serif; color: #222; margin: 2em auto; max-width: 860px; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
.source { color: #666; font-size: 0.9em; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: 0.3em 1.2em 0.3em 0; border-bottom: 1px solid #eee; vertical-align: top; }
th { font-weight: normal; color: #555; }
figure { margin: 1em 0; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption, .note { color: #555; font-size: 0.9em; }
code { font-size: 0.95em; }
`;

export function renderPage(p: Page): string {
  const rows = p.rows.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join('\n');
  const resumes =
    p.resumes.length === 0
      ? ''
      : `<h2>Resumes</h2>\n<ul>\n${p.resumes
          .map(
            (r) =>
              `<li>resumed at step ${r.step} from <code>${esc(r.checkpoint)}</code>; ` +
              'the interrupted attempt\u2019s later records were dropped</li>',
          )
          .join('\n')}\n</ul>`;
  const charts = p.charts
    .map(
      (c) =>
        `<h2>${esc(c.title)}</h2>\n<figure><img src="${esc(c.file)}" alt="${esc(c.title)}">` +
        `<figcaption>${esc(c.caption)}</figcaption></figure>`,
    )
    .join('\n');
  const notes = p.notes.map((n) => `<h2>${esc(n.title)}</h2>\n<p class="note">${esc(n.text)}</p>`).join('\n');
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>tsddp training report</title>
<style>${STYLE}</style>
</head>
<body>
<h1>tsddp training report</h1>
<p class="source">from <code>${esc(p.metricsFile)}</code>, generated ${esc(new Date().toISOString())}</p>
<h2>Summary</h2>
<table>
${rows}
</table>
${resumes}
${charts}
${notes}
</body>
</html>
`;
}
