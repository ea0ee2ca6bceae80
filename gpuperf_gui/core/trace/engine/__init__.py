"""Where the work runs: this process (api: load, analyse, diagnose, the JSON), or compact per-rank results on the
local pool or a Dask cluster (cluster)."""
