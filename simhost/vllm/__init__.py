"""The simulated host's fake vLLM 0.11 server (`vllm serve ...`)."""
