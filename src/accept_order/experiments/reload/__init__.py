"""One worker goes mid-load: what each mode loses (served, reset, refused, timed out) and why."""
