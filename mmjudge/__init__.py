"""mmjudge: measure LLM and multimodal LLM relevance judges against humans, with exact costs."""

__version__ = "0.1.0"
