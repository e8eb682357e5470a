from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TopologyLevel(_message.Message):
    __slots__ = ("name", "bandwidth_gbps")
    NAME_FIELD_NUMBER: _ClassVar[int]
    BANDWIDTH_GBPS_FIELD_NUMBER: _ClassVar[int]
    name: str
    bandwidth_gbps: float
    def __init__(self, name: _Optional[str] = ..., bandwidth_gbps: _Optional[float] = ...) -> None: ...

class GpuUsage(_message.Message):
    __slots__ = ("index", "milli_used", "memory_mib_used")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    MILLI_USED_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MIB_USED_FIELD_NUMBER: _ClassVar[int]
    index: int
    milli_used: int
    memory_mib_used: int
    def __init__(self, index: _Optional[int] = ..., milli_used: _Optional[int] = ..., memory_mib_used: _Optional[int] = ...) -> None: ...

class GpuNode(_message.Message):
    __slots__ = ("name", "gpu_type", "gpu_count", "gpu_memory_mib", "nvlink_domain_size", "cpu_milli", "memory_mib", "cpu_milli_used", "memory_mib_used", "groups", "gpu_usage")
    NAME_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    GPU_COUNT_FIELD_NUMBER: _ClassVar[int]
    GPU_MEMORY_MIB_FIELD_NUMBER: _ClassVar[int]
    NVLINK_DOMAIN_SIZE_FIELD_NUMBER: _ClassVar[int]
    CPU_MILLI_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MIB_FIELD_NUMBER: _ClassVar[int]
    CPU_MILLI_USED_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MIB_USED_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    GPU_USAGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    gpu_type: str
    gpu_count: int
    gpu_memory_mib: int
    nvlink_domain_size: int
    cpu_milli: int
    memory_mib: int
    cpu_milli_used: int
    memory_mib_used: int
    groups: _containers.RepeatedScalarFieldContainer[str]
    gpu_usage: _containers.RepeatedCompositeFieldContainer[GpuUsage]
    def __init__(self, name: _Optional[str] = ..., gpu_type: _Optional[str] = ..., gpu_count: _Optional[int] = ..., gpu_memory_mib: _Optional[int] = ..., nvlink_domain_size: _Optional[int] = ..., cpu_milli: _Optional[int] = ..., memory_mib: _Optional[int] = ..., cpu_milli_used: _Optional[int] = ..., memory_mib_used: _Optional[int] = ..., groups: _Optional[_Iterable[str]] = ..., gpu_usage: _Optional[_Iterable[_Union[GpuUsage, _Mapping]]] = ...) -> None: ...

class GpuCluster(_message.Message):
    __slots__ = ("levels", "nodes")
    LEVELS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    levels: _containers.RepeatedCompositeFieldContainer[TopologyLevel]
    nodes: _containers.RepeatedCompositeFieldContainer[GpuNode]
    def __init__(self, levels: _Optional[_Iterable[_Union[TopologyLevel, _Mapping]]] = ..., nodes: _Optional[_Iterable[_Union[GpuNode, _Mapping]]] = ...) -> None: ...

class GpuJob(_message.Message):
    __slots__ = ("name", "workers", "gpus", "gpu_milli", "gpu_memory_mib", "cpu_milli", "memory_mib", "gpu_types", "priority", "locality_level", "locality_required", "traffic_gb", "worker_names")
    NAME_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    GPU_MILLI_FIELD_NUMBER: _ClassVar[int]
    GPU_MEMORY_MIB_FIELD_NUMBER: _ClassVar[int]
    CPU_MILLI_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MIB_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPES_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_LEVEL_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    TRAFFIC_GB_FIELD_NUMBER: _ClassVar[int]
    WORKER_NAMES_FIELD_NUMBER: _ClassVar[int]
    name: str
    workers: int
    gpus: int
    gpu_milli: int
    gpu_memory_mib: int
    cpu_milli: int
    memory_mib: int
    gpu_types: _containers.RepeatedScalarFieldContainer[str]
    priority: int
    locality_level: str
    locality_required: bool
    traffic_gb: float
    worker_names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., workers: _Optional[int] = ..., gpus: _Optional[int] = ..., gpu_milli: _Optional[int] = ..., gpu_memory_mib: _Optional[int] = ..., cpu_milli: _Optional[int] = ..., memory_mib: _Optional[int] = ..., gpu_types: _Optional[_Iterable[str]] = ..., priority: _Optional[int] = ..., locality_level: _Optional[str] = ..., locality_required: _Optional[bool] = ..., traffic_gb: _Optional[float] = ..., worker_names: _Optional[_Iterable[str]] = ...) -> None: ...

class WorkloadClass(_message.Message):
    __slots__ = ("gpus", "gpu_milli", "weight")
    GPUS_FIELD_NUMBER: _ClassVar[int]
    GPU_MILLI_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    gpus: int
    gpu_milli: int
    weight: int
    def __init__(self, gpus: _Optional[int] = ..., gpu_milli: _Optional[int] = ..., weight: _Optional[int] = ...) -> None: ...

class GpuInstance(_message.Message):
    __slots__ = ("cluster", "jobs", "expected_mix", "locality_miss_penalty")
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_MIX_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_MISS_PENALTY_FIELD_NUMBER: _ClassVar[int]
    cluster: GpuCluster
    jobs: _containers.RepeatedCompositeFieldContainer[GpuJob]
    expected_mix: _containers.RepeatedCompositeFieldContainer[WorkloadClass]
    locality_miss_penalty: float
    def __init__(self, cluster: _Optional[_Union[GpuCluster, _Mapping]] = ..., jobs: _Optional[_Iterable[_Union[GpuJob, _Mapping]]] = ..., expected_mix: _Optional[_Iterable[_Union[WorkloadClass, _Mapping]]] = ..., locality_miss_penalty: _Optional[float] = ...) -> None: ...

class WorkerPlacement(_message.Message):
    __slots__ = ("node", "gpus")
    NODE_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    node: str
    gpus: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, node: _Optional[str] = ..., gpus: _Optional[_Iterable[int]] = ...) -> None: ...

class JobPlacement(_message.Message):
    __slots__ = ("job", "workers")
    JOB_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    job: str
    workers: _containers.RepeatedCompositeFieldContainer[WorkerPlacement]
    def __init__(self, job: _Optional[str] = ..., workers: _Optional[_Iterable[_Union[WorkerPlacement, _Mapping]]] = ...) -> None: ...

class UnplacedJob(_message.Message):
    __slots__ = ("name", "kind", "message", "needed", "largest_free", "largest_free_node", "blocking_jobs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NEEDED_FIELD_NUMBER: _ClassVar[int]
    LARGEST_FREE_FIELD_NUMBER: _ClassVar[int]
    LARGEST_FREE_NODE_FIELD_NUMBER: _ClassVar[int]
    BLOCKING_JOBS_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    message: str
    needed: str
    largest_free: int
    largest_free_node: str
    blocking_jobs: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., message: _Optional[str] = ..., needed: _Optional[str] = ..., largest_free: _Optional[int] = ..., largest_free_node: _Optional[str] = ..., blocking_jobs: _Optional[_Iterable[str]] = ...) -> None: ...

class GpuSolution(_message.Message):
    __slots__ = ("placements", "unplaced")
    PLACEMENTS_FIELD_NUMBER: _ClassVar[int]
    UNPLACED_FIELD_NUMBER: _ClassVar[int]
    placements: _containers.RepeatedCompositeFieldContainer[JobPlacement]
    unplaced: _containers.RepeatedCompositeFieldContainer[UnplacedJob]
    def __init__(self, placements: _Optional[_Iterable[_Union[JobPlacement, _Mapping]]] = ..., unplaced: _Optional[_Iterable[_Union[UnplacedJob, _Mapping]]] = ...) -> None: ...
