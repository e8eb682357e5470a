from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DispatchMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DISPATCH_MODE_UNSPECIFIED: _ClassVar[DispatchMode]
    IMMEDIATE_DISPATCH: _ClassVar[DispatchMode]
    DISPATCH_BACKFILL: _ClassVar[DispatchMode]
    DISPATCH_BUDGET: _ClassVar[DispatchMode]
    DISPATCH_BUNDLE: _ClassVar[DispatchMode]

class BudgetObjective(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BUDGET_OBJECTIVE_UNSPECIFIED: _ClassVar[BudgetObjective]
    BUDGET_COST: _ClassVar[BudgetObjective]
    BUDGET_TIME: _ClassVar[BudgetObjective]
    BUDGET_COST_TIME: _ClassVar[BudgetObjective]
DISPATCH_MODE_UNSPECIFIED: DispatchMode
IMMEDIATE_DISPATCH: DispatchMode
DISPATCH_BACKFILL: DispatchMode
DISPATCH_BUDGET: DispatchMode
DISPATCH_BUNDLE: DispatchMode
BUDGET_OBJECTIVE_UNSPECIFIED: BudgetObjective
BUDGET_COST: BudgetObjective
BUDGET_TIME: BudgetObjective
BUDGET_COST_TIME: BudgetObjective

class DispatchServer(_message.Message):
    __slots__ = ("name", "cores", "speed", "price", "dispatch_overhead")
    NAME_FIELD_NUMBER: _ClassVar[int]
    CORES_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    PRICE_FIELD_NUMBER: _ClassVar[int]
    DISPATCH_OVERHEAD_FIELD_NUMBER: _ClassVar[int]
    name: str
    cores: int
    speed: float
    price: float
    dispatch_overhead: int
    def __init__(self, name: _Optional[str] = ..., cores: _Optional[int] = ..., speed: _Optional[float] = ..., price: _Optional[float] = ..., dispatch_overhead: _Optional[int] = ...) -> None: ...

class DispatchJob(_message.Message):
    __slots__ = ("name", "arrival", "size", "cores", "deadline", "weight")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARRIVAL_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    CORES_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    name: str
    arrival: int
    size: int
    cores: int
    deadline: int
    weight: int
    def __init__(self, name: _Optional[str] = ..., arrival: _Optional[int] = ..., size: _Optional[int] = ..., cores: _Optional[int] = ..., deadline: _Optional[int] = ..., weight: _Optional[int] = ...) -> None: ...

class DispatchInstance(_message.Message):
    __slots__ = ("servers", "jobs", "mode", "budget", "bundle")
    SERVERS_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    servers: _containers.RepeatedCompositeFieldContainer[DispatchServer]
    jobs: _containers.RepeatedCompositeFieldContainer[DispatchJob]
    mode: DispatchMode
    budget: DispatchBudget
    bundle: DispatchBundle
    def __init__(self, servers: _Optional[_Iterable[_Union[DispatchServer, _Mapping]]] = ..., jobs: _Optional[_Iterable[_Union[DispatchJob, _Mapping]]] = ..., mode: _Optional[_Union[DispatchMode, str]] = ..., budget: _Optional[_Union[DispatchBudget, _Mapping]] = ..., bundle: _Optional[_Union[DispatchBundle, _Mapping]] = ...) -> None: ...

class DispatchBundle(_message.Message):
    __slots__ = ("scheduler_overhead", "short_size")
    SCHEDULER_OVERHEAD_FIELD_NUMBER: _ClassVar[int]
    SHORT_SIZE_FIELD_NUMBER: _ClassVar[int]
    scheduler_overhead: int
    short_size: int
    def __init__(self, scheduler_overhead: _Optional[int] = ..., short_size: _Optional[int] = ...) -> None: ...

class DispatchBudget(_message.Message):
    __slots__ = ("deadline", "budget", "objective")
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    BUDGET_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    deadline: int
    budget: int
    objective: BudgetObjective
    def __init__(self, deadline: _Optional[int] = ..., budget: _Optional[int] = ..., objective: _Optional[_Union[BudgetObjective, str]] = ...) -> None: ...

class DispatchRun(_message.Message):
    __slots__ = ("job", "server", "start", "end", "response", "bundle")
    JOB_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FIELD_NUMBER: _ClassVar[int]
    BUNDLE_FIELD_NUMBER: _ClassVar[int]
    job: str
    server: str
    start: int
    end: int
    response: int
    bundle: str
    def __init__(self, job: _Optional[str] = ..., server: _Optional[str] = ..., start: _Optional[int] = ..., end: _Optional[int] = ..., response: _Optional[int] = ..., bundle: _Optional[str] = ...) -> None: ...

class DispatchFigures(_message.Message):
    __slots__ = ("total_weighted_flow_time", "mean_response", "mean_slowdown", "p99_response", "makespan", "deadlines_missed", "cost")
    TOTAL_WEIGHTED_FLOW_TIME_FIELD_NUMBER: _ClassVar[int]
    MEAN_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    MEAN_SLOWDOWN_FIELD_NUMBER: _ClassVar[int]
    P99_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    MAKESPAN_FIELD_NUMBER: _ClassVar[int]
    DEADLINES_MISSED_FIELD_NUMBER: _ClassVar[int]
    COST_FIELD_NUMBER: _ClassVar[int]
    total_weighted_flow_time: int
    mean_response: float
    mean_slowdown: float
    p99_response: float
    makespan: int
    deadlines_missed: int
    cost: int
    def __init__(self, total_weighted_flow_time: _Optional[int] = ..., mean_response: _Optional[float] = ..., mean_slowdown: _Optional[float] = ..., p99_response: _Optional[float] = ..., makespan: _Optional[int] = ..., deadlines_missed: _Optional[int] = ..., cost: _Optional[int] = ...) -> None: ...

class DispatchSolution(_message.Message):
    __slots__ = ("runs", "figures")
    RUNS_FIELD_NUMBER: _ClassVar[int]
    FIGURES_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[DispatchRun]
    figures: DispatchFigures
    def __init__(self, runs: _Optional[_Iterable[_Union[DispatchRun, _Mapping]]] = ..., figures: _Optional[_Union[DispatchFigures, _Mapping]] = ...) -> None: ...
