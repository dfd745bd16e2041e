import torch


class Coordinator:
    """Fetches parameters on an all-gather stream; the registry is a Python dict."""

    def __init__(self, inflight_param_registry):
        self.allgather_stream = torch.cuda.Stream()
        self.inflight_param_registry = inflight_param_registry

    def fetch(self, param, handle):
        with torch.cuda.stream(self.allgather_stream):
            handle.launch()
        self.inflight_param_registry[param] = handle

    def wait(self, param):
        with torch.cuda.stream(self.allgather_stream):
            self.inflight_param_registry.pop(param).wait()
