"""Scale: LiHua-World among distractors up to 30 times its size: builds, latency, memory, recall,
the bytes per KB of each kind of text and the marginal cost of new text."""
