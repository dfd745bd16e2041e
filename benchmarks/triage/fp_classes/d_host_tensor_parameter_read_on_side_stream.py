import torch


class IdTransformer:
    def __init__(self):
        self._stream = torch.cuda.Stream()

    def unique_ids(self, global_ids):
        # global_ids are CPU tensors: they are moved to the GPU right here
        with torch.cuda.stream(self._stream):
            all_ids = torch.cat(global_ids).to("cuda:0")
            return torch.unique(all_ids).to("cpu")
