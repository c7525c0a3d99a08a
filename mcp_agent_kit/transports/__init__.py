"""transports: move bytes between peers and the sans-IO dispatcher (stdio, Streamable HTTP)."""
