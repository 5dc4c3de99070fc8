"""The SLM's answers on dev questions: accuracy, answer rules, abstention, prompt injection,
latency, and the on-device suite."""
