"""Typed stubs of the compiled BatchClassify request reader (service/api/_requests.pyx)."""

from array import array

from shuangkou.v1 import service_pb2

def read_batch_request(data: bytes) -> tuple[str, memoryview, array[int]] | \
    service_pb2.BatchClassifyRequest: ...
