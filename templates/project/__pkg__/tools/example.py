"""An example tool: replace it with your own."""

from typing import Annotated


def ${example_tool}(text: Annotated[str, "The text to analyse."]) -> dict[str, int]:
    """Use when you need the number of words and characters in a piece of text. Do not use for counting tokens or bytes."""
    return {"words": len(text.split()), "characters": len(text)}
