"""What a loaded trace is: ranks of lanes of numpy columns (trace_model), string masks, the timeline's lanes and
levels of detail, the questions asked of its events (queries; host_sync: which idle gaps follow a blocking
sync)."""
