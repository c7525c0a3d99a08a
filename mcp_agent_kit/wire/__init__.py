"""wire: protocol facts and message framing. Imports nothing else of this package."""
