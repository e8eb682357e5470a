from placement.api.v1 import gpu_pb2 as _gpu_pb2
from placement.api.v1 import entanglement_pb2 as _entanglement_pb2
from placement.api.v1 import partition_pb2 as _partition_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Instance(_message.Message):
    __slots__ = ("name", "description", "gpu", "entanglement", "partition")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    ENTANGLEMENT_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    gpu: _gpu_pb2.GpuInstance
    entanglement: _entanglement_pb2.EntanglementInstance
    partition: _partition_pb2.PartitionInstance
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., gpu: _Optional[_Union[_gpu_pb2.GpuInstance, _Mapping]] = ..., entanglement: _Optional[_Union[_entanglement_pb2.EntanglementInstance, _Mapping]] = ..., partition: _Optional[_Union[_partition_pb2.PartitionInstance, _Mapping]] = ...) -> None: ...

class Solution(_message.Message):
    __slots__ = ("instance_name", "gpu", "entanglement", "partition")
    INSTANCE_NAME_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    ENTANGLEMENT_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    instance_name: str
    gpu: _gpu_pb2.GpuSolution
    entanglement: _entanglement_pb2.EntanglementSolution
    partition: _partition_pb2.PartitionSolution
    def __init__(self, instance_name: _Optional[str] = ..., gpu: _Optional[_Union[_gpu_pb2.GpuSolution, _Mapping]] = ..., entanglement: _Optional[_Union[_entanglement_pb2.EntanglementSolution, _Mapping]] = ..., partition: _Optional[_Union[_partition_pb2.PartitionSolution, _Mapping]] = ...) -> None: ...
