"""The llama.cpp host's engine: the REAL `llama-server` built by `make engine` (`build`), placed in the host with
SmolLM2 (`layout`)."""
