"""The fake SGLang 0.5.9 server the supervisor starts for `python3 -m sglang.launch_server ...`."""
