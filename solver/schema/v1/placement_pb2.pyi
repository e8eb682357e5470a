from placement.solver.schema.v1 import dag_pb2 as _dag_pb2
from placement.solver.schema.v1 import dispatch_pb2 as _dispatch_pb2
from placement.solver.schema.v1 import entanglement_pb2 as _entanglement_pb2
from placement.solver.schema.v1 import fl_pb2 as _fl_pb2
from placement.solver.schema.v1 import gpu_pb2 as _gpu_pb2
from placement.solver.schema.v1 import mc_pb2 as _mc_pb2
from placement.solver.schema.v1 import partition_pb2 as _partition_pb2
from placement.solver.schema.v1 import serving_pb2 as _serving_pb2
from placement.solver.schema.v1 import sharding_pb2 as _sharding_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Instance(_message.Message):
    __slots__ = ("name", "description", "gpu", "dag", "partition", "entanglement", "mc", "sharding", "dispatch", "fl", "serving")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    DAG_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ENTANGLEMENT_FIELD_NUMBER: _ClassVar[int]
    MC_FIELD_NUMBER: _ClassVar[int]
    SHARDING_FIELD_NUMBER: _ClassVar[int]
    DISPATCH_FIELD_NUMBER: _ClassVar[int]
    FL_FIELD_NUMBER: _ClassVar[int]
    SERVING_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    gpu: _gpu_pb2.GpuInstance
    dag: _dag_pb2.DagInstance
    partition: _partition_pb2.PartitionInstance
    entanglement: _entanglement_pb2.EntanglementInstance
    mc: _mc_pb2.McInstance
    sharding: _sharding_pb2.ShardingInstance
    dispatch: _dispatch_pb2.DispatchInstance
    fl: _fl_pb2.FlInstance
    serving: _serving_pb2.ServingInstance
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., gpu: _Optional[_Union[_gpu_pb2.GpuInstance, _Mapping]] = ..., dag: _Optional[_Union[_dag_pb2.DagInstance, _Mapping]] = ..., partition: _Optional[_Union[_partition_pb2.PartitionInstance, _Mapping]] = ..., entanglement: _Optional[_Union[_entanglement_pb2.EntanglementInstance, _Mapping]] = ..., mc: _Optional[_Union[_mc_pb2.McInstance, _Mapping]] = ..., sharding: _Optional[_Union[_sharding_pb2.ShardingInstance, _Mapping]] = ..., dispatch: _Optional[_Union[_dispatch_pb2.DispatchInstance, _Mapping]] = ..., fl: _Optional[_Union[_fl_pb2.FlInstance, _Mapping]] = ..., serving: _Optional[_Union[_serving_pb2.ServingInstance, _Mapping]] = ...) -> None: ...

class Solution(_message.Message):
    __slots__ = ("instance_name", "gpu", "dag", "partition", "entanglement", "mc", "sharding", "dispatch", "fl", "serving")
    INSTANCE_NAME_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    DAG_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ENTANGLEMENT_FIELD_NUMBER: _ClassVar[int]
    MC_FIELD_NUMBER: _ClassVar[int]
    SHARDING_FIELD_NUMBER: _ClassVar[int]
    DISPATCH_FIELD_NUMBER: _ClassVar[int]
    FL_FIELD_NUMBER: _ClassVar[int]
    SERVING_FIELD_NUMBER: _ClassVar[int]
    instance_name: str
    gpu: _gpu_pb2.GpuSolution
    dag: _dag_pb2.DagSolution
    partition: _partition_pb2.PartitionSolution
    entanglement: _entanglement_pb2.EntanglementSolution
    mc: _mc_pb2.McSolution
    sharding: _sharding_pb2.ShardingSolution
    dispatch: _dispatch_pb2.DispatchSolution
    fl: _fl_pb2.FlSolution
    serving: _serving_pb2.ServingSolution
    def __init__(self, instance_name: _Optional[str] = ..., gpu: _Optional[_Union[_gpu_pb2.GpuSolution, _Mapping]] = ..., dag: _Optional[_Union[_dag_pb2.DagSolution, _Mapping]] = ..., partition: _Optional[_Union[_partition_pb2.PartitionSolution, _Mapping]] = ..., entanglement: _Optional[_Union[_entanglement_pb2.EntanglementSolution, _Mapping]] = ..., mc: _Optional[_Union[_mc_pb2.McSolution, _Mapping]] = ..., sharding: _Optional[_Union[_sharding_pb2.ShardingSolution, _Mapping]] = ..., dispatch: _Optional[_Union[_dispatch_pb2.DispatchSolution, _Mapping]] = ..., fl: _Optional[_Union[_fl_pb2.FlSolution, _Mapping]] = ..., serving: _Optional[_Union[_serving_pb2.ServingSolution, _Mapping]] = ...) -> None: ...
