"""scaffold: renders a new agent project from templates/ and runs the checks behind validate.py."""
