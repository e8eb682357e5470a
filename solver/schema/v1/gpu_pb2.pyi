from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PreemptionPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PREEMPTION_POLICY_UNSPECIFIED: _ClassVar[PreemptionPolicy]
    NEVER: _ClassVar[PreemptionPolicy]
    LOWER_PRIORITY: _ClassVar[PreemptionPolicy]
    RECLAIM_WITHIN_QUOTA: _ClassVar[PreemptionPolicy]
PREEMPTION_POLICY_UNSPECIFIED: PreemptionPolicy
NEVER: PreemptionPolicy
LOWER_PRIORITY: PreemptionPolicy
RECLAIM_WITHIN_QUOTA: PreemptionPolicy

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
    __slots__ = ("name", "gpu_type", "gpu_count", "gpu_memory_mib", "nvlink_domain_size", "cpu_milli", "memory_mib", "cpu_milli_used", "memory_mib_used", "groups", "gpu_usage", "pods_used", "cpu_density")
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
    PODS_USED_FIELD_NUMBER: _ClassVar[int]
    CPU_DENSITY_FIELD_NUMBER: _ClassVar[int]
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
    pods_used: int
    cpu_density: CpuDensity
    def __init__(self, name: _Optional[str] = ..., gpu_type: _Optional[str] = ..., gpu_count: _Optional[int] = ..., gpu_memory_mib: _Optional[int] = ..., nvlink_domain_size: _Optional[int] = ..., cpu_milli: _Optional[int] = ..., memory_mib: _Optional[int] = ..., cpu_milli_used: _Optional[int] = ..., memory_mib_used: _Optional[int] = ..., groups: _Optional[_Iterable[str]] = ..., gpu_usage: _Optional[_Iterable[_Union[GpuUsage, _Mapping]]] = ..., pods_used: _Optional[int] = ..., cpu_density: _Optional[_Union[CpuDensity, _Mapping]] = ...) -> None: ...

class CpuDensity(_message.Message):
    __slots__ = ("overhead_milli_per_pod", "curve")
    OVERHEAD_MILLI_PER_POD_FIELD_NUMBER: _ClassVar[int]
    CURVE_FIELD_NUMBER: _ClassVar[int]
    overhead_milli_per_pod: int
    curve: _containers.RepeatedCompositeFieldContainer[CpuCapacityPoint]
    def __init__(self, overhead_milli_per_pod: _Optional[int] = ..., curve: _Optional[_Iterable[_Union[CpuCapacityPoint, _Mapping]]] = ...) -> None: ...

class CpuCapacityPoint(_message.Message):
    __slots__ = ("pods", "cpu_milli")
    PODS_FIELD_NUMBER: _ClassVar[int]
    CPU_MILLI_FIELD_NUMBER: _ClassVar[int]
    pods: int
    cpu_milli: int
    def __init__(self, pods: _Optional[int] = ..., cpu_milli: _Optional[int] = ...) -> None: ...

class GpuCluster(_message.Message):
    __slots__ = ("levels", "nodes")
    LEVELS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    levels: _containers.RepeatedCompositeFieldContainer[TopologyLevel]
    nodes: _containers.RepeatedCompositeFieldContainer[GpuNode]
    def __init__(self, levels: _Optional[_Iterable[_Union[TopologyLevel, _Mapping]]] = ..., nodes: _Optional[_Iterable[_Union[GpuNode, _Mapping]]] = ...) -> None: ...

class GpuJob(_message.Message):
    __slots__ = ("name", "workers", "gpus", "gpu_milli", "gpu_memory_mib", "cpu_milli", "memory_mib", "gpu_types", "priority", "locality_level", "locality_required", "traffic_gb", "worker_names", "current", "preemptible", "preemption_cost", "migration_cost", "min_workers", "queue", "size_utility_milli")
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
    CURRENT_FIELD_NUMBER: _ClassVar[int]
    PREEMPTIBLE_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_COST_FIELD_NUMBER: _ClassVar[int]
    MIGRATION_COST_FIELD_NUMBER: _ClassVar[int]
    MIN_WORKERS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    SIZE_UTILITY_MILLI_FIELD_NUMBER: _ClassVar[int]
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
    current: _containers.RepeatedCompositeFieldContainer[WorkerPlacement]
    preemptible: bool
    preemption_cost: int
    migration_cost: int
    min_workers: int
    queue: str
    size_utility_milli: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., workers: _Optional[int] = ..., gpus: _Optional[int] = ..., gpu_milli: _Optional[int] = ..., gpu_memory_mib: _Optional[int] = ..., cpu_milli: _Optional[int] = ..., memory_mib: _Optional[int] = ..., gpu_types: _Optional[_Iterable[str]] = ..., priority: _Optional[int] = ..., locality_level: _Optional[str] = ..., locality_required: _Optional[bool] = ..., traffic_gb: _Optional[float] = ..., worker_names: _Optional[_Iterable[str]] = ..., current: _Optional[_Iterable[_Union[WorkerPlacement, _Mapping]]] = ..., preemptible: _Optional[bool] = ..., preemption_cost: _Optional[int] = ..., migration_cost: _Optional[int] = ..., min_workers: _Optional[int] = ..., queue: _Optional[str] = ..., size_utility_milli: _Optional[_Iterable[int]] = ...) -> None: ...

class GpuQueue(_message.Message):
    __slots__ = ("name", "guaranteed_milli", "borrowing_limit_milli", "priority")
    NAME_FIELD_NUMBER: _ClassVar[int]
    GUARANTEED_MILLI_FIELD_NUMBER: _ClassVar[int]
    BORROWING_LIMIT_MILLI_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    name: str
    guaranteed_milli: int
    borrowing_limit_milli: int
    priority: int
    def __init__(self, name: _Optional[str] = ..., guaranteed_milli: _Optional[int] = ..., borrowing_limit_milli: _Optional[int] = ..., priority: _Optional[int] = ...) -> None: ...

class DisruptionBudget(_message.Message):
    __slots__ = ("max_migrated_workers", "max_preempted_workers", "max_disruption_cost")
    MAX_MIGRATED_WORKERS_FIELD_NUMBER: _ClassVar[int]
    MAX_PREEMPTED_WORKERS_FIELD_NUMBER: _ClassVar[int]
    MAX_DISRUPTION_COST_FIELD_NUMBER: _ClassVar[int]
    max_migrated_workers: int
    max_preempted_workers: int
    max_disruption_cost: int
    def __init__(self, max_migrated_workers: _Optional[int] = ..., max_preempted_workers: _Optional[int] = ..., max_disruption_cost: _Optional[int] = ...) -> None: ...

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
    __slots__ = ("cluster", "jobs", "expected_mix", "locality_miss_penalty", "queues", "preemption_policy", "disruption_budget", "topology_fit")
    CLUSTER_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_MIX_FIELD_NUMBER: _ClassVar[int]
    LOCALITY_MISS_PENALTY_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    PREEMPTION_POLICY_FIELD_NUMBER: _ClassVar[int]
    DISRUPTION_BUDGET_FIELD_NUMBER: _ClassVar[int]
    TOPOLOGY_FIT_FIELD_NUMBER: _ClassVar[int]
    cluster: GpuCluster
    jobs: _containers.RepeatedCompositeFieldContainer[GpuJob]
    expected_mix: _containers.RepeatedCompositeFieldContainer[WorkloadClass]
    locality_miss_penalty: float
    queues: _containers.RepeatedCompositeFieldContainer[GpuQueue]
    preemption_policy: PreemptionPolicy
    disruption_budget: DisruptionBudget
    topology_fit: bool
    def __init__(self, cluster: _Optional[_Union[GpuCluster, _Mapping]] = ..., jobs: _Optional[_Iterable[_Union[GpuJob, _Mapping]]] = ..., expected_mix: _Optional[_Iterable[_Union[WorkloadClass, _Mapping]]] = ..., locality_miss_penalty: _Optional[float] = ..., queues: _Optional[_Iterable[_Union[GpuQueue, _Mapping]]] = ..., preemption_policy: _Optional[_Union[PreemptionPolicy, str]] = ..., disruption_budget: _Optional[_Union[DisruptionBudget, _Mapping]] = ..., topology_fit: _Optional[bool] = ...) -> None: ...

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
    __slots__ = ("placements", "unplaced", "decisions")
    PLACEMENTS_FIELD_NUMBER: _ClassVar[int]
    UNPLACED_FIELD_NUMBER: _ClassVar[int]
    DECISIONS_FIELD_NUMBER: _ClassVar[int]
    placements: _containers.RepeatedCompositeFieldContainer[JobPlacement]
    unplaced: _containers.RepeatedCompositeFieldContainer[UnplacedJob]
    decisions: _containers.RepeatedCompositeFieldContainer[RunningJobDecision]
    def __init__(self, placements: _Optional[_Iterable[_Union[JobPlacement, _Mapping]]] = ..., unplaced: _Optional[_Iterable[_Union[UnplacedJob, _Mapping]]] = ..., decisions: _Optional[_Iterable[_Union[RunningJobDecision, _Mapping]]] = ...) -> None: ...

class RunningJobDecision(_message.Message):
    __slots__ = ("job", "action", "workers_before", "workers_after", "migrated_workers", "preempted_workers", "cost", "made_room_for", "rule", "message")
    JOB_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    WORKERS_BEFORE_FIELD_NUMBER: _ClassVar[int]
    WORKERS_AFTER_FIELD_NUMBER: _ClassVar[int]
    MIGRATED_WORKERS_FIELD_NUMBER: _ClassVar[int]
    PREEMPTED_WORKERS_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    MADE_ROOM_FOR_FIELD_NUMBER: _ClassVar[int]
    RULE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    job: str
    action: str
    workers_before: int
    workers_after: int
    migrated_workers: int
    preempted_workers: int
    cost: int
    made_room_for: _containers.RepeatedScalarFieldContainer[str]
    rule: str
    message: str
    def __init__(self, job: _Optional[str] = ..., action: _Optional[str] = ..., workers_before: _Optional[int] = ..., workers_after: _Optional[int] = ..., migrated_workers: _Optional[int] = ..., preempted_workers: _Optional[int] = ..., cost: _Optional[int] = ..., made_room_for: _Optional[_Iterable[str]] = ..., rule: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...
