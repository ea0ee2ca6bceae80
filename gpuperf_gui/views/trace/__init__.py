"""The Trace tab's widgets (``tab.TraceTab`` and its pages, timeline, panels); its state is ``core.trace.session.tab_state``.

Nothing is imported here: ``main_window`` builds the tab lazily, and the trace engine loads with it."""
