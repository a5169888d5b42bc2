"""Speed benchmark and a straightforward reference implementation of the biLM forward pass."""
