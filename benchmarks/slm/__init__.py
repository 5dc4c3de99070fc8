"""The small language models on the device: decode and prefill speed, export quality and memory, the
board profiles' SLMs and the memory budget."""
