import torch


class IdTransformer:
    def __init__(self, transformer):
        self.transformer = transformer
        self._stream = torch.cuda.Stream()

    def _transform(self, global_ids, cache_ids):
        with torch.cuda.stream(self._stream):
            success, ids_to_fetch = self.transformer.transform(global_ids, cache_ids)
            return success, ids_to_fetch

    def transform(self, global_ids, cache_ids, broadcast):
        success, ids_to_fetch = self._transform(global_ids, cache_ids)
        return broadcast(success, ids_to_fetch)
