"""Reports: the task plan, running it, analysis, rendering, plots, the results schema and comparison."""
