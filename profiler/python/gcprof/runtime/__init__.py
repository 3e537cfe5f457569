"""Applying a checkpoint plan inside the job: reading the plan file (plan.py),
wrapping the planned modules (checkpointing.py) and, under GCPROF_PLAN, doing
so on the job's first training forward (env_plan.py). gcprof::torch
(runtime/torch) is the same for LibTorch programs."""
