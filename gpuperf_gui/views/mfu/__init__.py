"""The MFU tab's widgets (``tab.MfuTab``, ``gap_bar.GapBar``); its state and input rules are ``core.mfu_state``."""
