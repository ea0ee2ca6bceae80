"""One trace, one object (trace.Trace), what the Trace tab holds of it (loaded_trace.LoadedTrace) and its life
(load_state), two traces compared (diff, diff_headline)."""
