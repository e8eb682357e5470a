from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DagMachine(_message.Message):
    __slots__ = ("name", "type", "speed", "slots", "memory_mib", "cost_per_hour", "zone")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MIB_FIELD_NUMBER: _ClassVar[int]
    COST_PER_HOUR_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    speed: float
    slots: int
    memory_mib: int
    cost_per_hour: float
    zone: str
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., speed: _Optional[float] = ..., slots: _Optional[int] = ..., memory_mib: _Optional[int] = ..., cost_per_hour: _Optional[float] = ..., zone: _Optional[str] = ...) -> None: ...

class DagLink(_message.Message):
    __slots__ = ("from_zone", "to_zone", "bandwidth_bytes_per_s", "latency_s")
    FROM_ZONE_FIELD_NUMBER: _ClassVar[int]
    TO_ZONE_FIELD_NUMBER: _ClassVar[int]
    BANDWIDTH_BYTES_PER_S_FIELD_NUMBER: _ClassVar[int]
    LATENCY_S_FIELD_NUMBER: _ClassVar[int]
    from_zone: str
    to_zone: str
    bandwidth_bytes_per_s: float
    latency_s: float
    def __init__(self, from_zone: _Optional[str] = ..., to_zone: _Optional[str] = ..., bandwidth_bytes_per_s: _Optional[float] = ..., latency_s: _Optional[float] = ...) -> None: ...

class TypeTime(_message.Message):
    __slots__ = ("type", "seconds")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    SECONDS_FIELD_NUMBER: _ClassVar[int]
    type: str
    seconds: float
    def __init__(self, type: _Optional[str] = ..., seconds: _Optional[float] = ...) -> None: ...

class DagTask(_message.Message):
    __slots__ = ("name", "work", "times", "memory_mib", "cores", "release_s", "deadline_s", "data_zone", "data_machine", "data_bytes", "data_pinned")
    NAME_FIELD_NUMBER: _ClassVar[int]
    WORK_FIELD_NUMBER: _ClassVar[int]
    TIMES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_MIB_FIELD_NUMBER: _ClassVar[int]
    CORES_FIELD_NUMBER: _ClassVar[int]
    RELEASE_S_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_S_FIELD_NUMBER: _ClassVar[int]
    DATA_ZONE_FIELD_NUMBER: _ClassVar[int]
    DATA_MACHINE_FIELD_NUMBER: _ClassVar[int]
    DATA_BYTES_FIELD_NUMBER: _ClassVar[int]
    DATA_PINNED_FIELD_NUMBER: _ClassVar[int]
    name: str
    work: float
    times: _containers.RepeatedCompositeFieldContainer[TypeTime]
    memory_mib: int
    cores: int
    release_s: float
    deadline_s: float
    data_zone: str
    data_machine: str
    data_bytes: float
    data_pinned: bool
    def __init__(self, name: _Optional[str] = ..., work: _Optional[float] = ..., times: _Optional[_Iterable[_Union[TypeTime, _Mapping]]] = ..., memory_mib: _Optional[int] = ..., cores: _Optional[int] = ..., release_s: _Optional[float] = ..., deadline_s: _Optional[float] = ..., data_zone: _Optional[str] = ..., data_machine: _Optional[str] = ..., data_bytes: _Optional[float] = ..., data_pinned: _Optional[bool] = ...) -> None: ...

class DagEdge(_message.Message):
    __slots__ = ("parent", "child", "data_bytes")
    PARENT_FIELD_NUMBER: _ClassVar[int]
    CHILD_FIELD_NUMBER: _ClassVar[int]
    DATA_BYTES_FIELD_NUMBER: _ClassVar[int]
    parent: str
    child: str
    data_bytes: float
    def __init__(self, parent: _Optional[str] = ..., child: _Optional[str] = ..., data_bytes: _Optional[float] = ...) -> None: ...

class DagInstance(_message.Message):
    __slots__ = ("machines", "links", "tasks", "edges", "objective", "makespan_limit_s", "makespan_weight", "cost_weight")
    MACHINES_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    MAKESPAN_LIMIT_S_FIELD_NUMBER: _ClassVar[int]
    MAKESPAN_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    COST_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    machines: _containers.RepeatedCompositeFieldContainer[DagMachine]
    links: _containers.RepeatedCompositeFieldContainer[DagLink]
    tasks: _containers.RepeatedCompositeFieldContainer[DagTask]
    edges: _containers.RepeatedCompositeFieldContainer[DagEdge]
    objective: str
    makespan_limit_s: float
    makespan_weight: float
    cost_weight: float
    def __init__(self, machines: _Optional[_Iterable[_Union[DagMachine, _Mapping]]] = ..., links: _Optional[_Iterable[_Union[DagLink, _Mapping]]] = ..., tasks: _Optional[_Iterable[_Union[DagTask, _Mapping]]] = ..., edges: _Optional[_Iterable[_Union[DagEdge, _Mapping]]] = ..., objective: _Optional[str] = ..., makespan_limit_s: _Optional[float] = ..., makespan_weight: _Optional[float] = ..., cost_weight: _Optional[float] = ...) -> None: ...

class TaskRun(_message.Message):
    __slots__ = ("task", "machine", "start_s", "end_s")
    TASK_FIELD_NUMBER: _ClassVar[int]
    MACHINE_FIELD_NUMBER: _ClassVar[int]
    START_S_FIELD_NUMBER: _ClassVar[int]
    END_S_FIELD_NUMBER: _ClassVar[int]
    task: str
    machine: str
    start_s: float
    end_s: float
    def __init__(self, task: _Optional[str] = ..., machine: _Optional[str] = ..., start_s: _Optional[float] = ..., end_s: _Optional[float] = ...) -> None: ...

class DagSolution(_message.Message):
    __slots__ = ("runs", "makespan_s", "cost")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    MAKESPAN_S_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[TaskRun]
    makespan_s: float
    cost: float
    def __init__(self, runs: _Optional[_Iterable[_Union[TaskRun, _Mapping]]] = ..., makespan_s: _Optional[float] = ..., cost: _Optional[float] = ...) -> None: ...
