"""core: protocol-neutral building blocks (schemas, content, signatures)."""
