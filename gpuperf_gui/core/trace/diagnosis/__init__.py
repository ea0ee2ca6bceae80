"""What the figures mean: the signature registry (signatures/, one module each), the diagnosis, the late rank of
a job, the figures the other tabs take (MFU gap causes, roofline points)."""
