"""Figures from a loaded model, whoever loaded it: one rank's analysis (rank_analysis), intervals, kernel
evidence, the profiler's overhead, the critical path and what-if, the op table and its roofline points, the
kernel table and roof, the overview."""
