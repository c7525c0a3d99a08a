"""Tests for ${name}: the tools work, and the server answers real MCP requests in both eras.

Run with the standard library (`python -m unittest discover -s tests -v`) or with `python -m pytest`.
"""

import unittest

from ${pkg}.server import server
from ${pkg}.tools.example import ${example_tool}


class ExampleToolTest(unittest.TestCase):
    def test_counts_words_and_characters(self) -> None:
        self.assertEqual(${example_tool}("hello big world"), {"words": 3, "characters": 15})


class ServerTest(unittest.TestCase):
    """The server in memory: `server.test_client(era)` builds each era's envelope for us."""

    def test_lists_and_calls_the_tool_in_both_eras(self) -> None:
        for era in ("2026-07-28", "2025-11-25"):
            with self.subTest(era=era):
                client = server.test_client(era)
                self.assertIn("${example_tool}", [tool["name"] for tool in client.list_tools()])
                result = client.call_tool("${example_tool}", {"text": "a b"})
                self.assertEqual(result["structuredContent"], {"words": 2, "characters": 3})

    def test_invalid_arguments_are_a_tool_error(self) -> None:
        result = server.test_client().call_tool("${example_tool}", {"text": 42})
        self.assertIs(result["isError"], True)


if __name__ == "__main__":
    unittest.main()
