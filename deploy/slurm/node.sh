#!/bin/bash
# One node of a SLURM job (run by train.sbatch through srun): SLURM's variables become
# tsrun's flags. Tested by test/deploy-templates.test.ts (SLURM's environment fed to it).
set -euo pipefail
exec ${TSRUN:-npx tsrun} \
  --nnodes "$SLURM_NNODES" \
  --node-rank "$SLURM_NODEID" \
  --master-addr "$MASTER_ADDR" \
  --master-port "$MASTER_PORT" \
  --nproc-per-node "${NPROC_PER_NODE:-gpu}" \
  --max-restarts "${MAX_RESTARTS:-3}" \
  "$@"
