from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class McCriticality(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MC_CRITICALITY_UNSPECIFIED: _ClassVar[McCriticality]
    LO: _ClassVar[McCriticality]
    HI: _ClassVar[McCriticality]

class McObjective(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MC_OBJECTIVE_UNSPECIFIED: _ClassVar[McObjective]
    MAX_MIN_SLACK: _ClassVar[McObjective]
    MIN_CORES: _ClassVar[McObjective]

class McTest(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MC_TEST_UNSPECIFIED: _ClassVar[McTest]
    EDF_VD: _ClassVar[McTest]
    AMC_RTB: _ClassVar[McTest]
MC_CRITICALITY_UNSPECIFIED: McCriticality
LO: McCriticality
HI: McCriticality
MC_OBJECTIVE_UNSPECIFIED: McObjective
MAX_MIN_SLACK: McObjective
MIN_CORES: McObjective
MC_TEST_UNSPECIFIED: McTest
EDF_VD: McTest
AMC_RTB: McTest

class McTask(_message.Message):
    __slots__ = ("name", "period", "deadline", "criticality", "budget_lo", "budget_hi", "pinned_core", "excluded_cores", "drop_cost")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PERIOD_FIELD_NUMBER: _ClassVar[int]
    DEADLINE_FIELD_NUMBER: _ClassVar[int]
    CRITICALITY_FIELD_NUMBER: _ClassVar[int]
    BUDGET_LO_FIELD_NUMBER: _ClassVar[int]
    BUDGET_HI_FIELD_NUMBER: _ClassVar[int]
    PINNED_CORE_FIELD_NUMBER: _ClassVar[int]
    EXCLUDED_CORES_FIELD_NUMBER: _ClassVar[int]
    DROP_COST_FIELD_NUMBER: _ClassVar[int]
    name: str
    period: int
    deadline: int
    criticality: McCriticality
    budget_lo: int
    budget_hi: int
    pinned_core: str
    excluded_cores: _containers.RepeatedScalarFieldContainer[str]
    drop_cost: int
    def __init__(self, name: _Optional[str] = ..., period: _Optional[int] = ..., deadline: _Optional[int] = ..., criticality: _Optional[_Union[McCriticality, str]] = ..., budget_lo: _Optional[int] = ..., budget_hi: _Optional[int] = ..., pinned_core: _Optional[str] = ..., excluded_cores: _Optional[_Iterable[str]] = ..., drop_cost: _Optional[int] = ...) -> None: ...

class McCore(_message.Message):
    __slots__ = ("name", "speed")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SPEED_FIELD_NUMBER: _ClassVar[int]
    name: str
    speed: float
    def __init__(self, name: _Optional[str] = ..., speed: _Optional[float] = ...) -> None: ...

class McInstance(_message.Message):
    __slots__ = ("tasks", "cores", "objective", "test")
    TASKS_FIELD_NUMBER: _ClassVar[int]
    CORES_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    TEST_FIELD_NUMBER: _ClassVar[int]
    tasks: _containers.RepeatedCompositeFieldContainer[McTask]
    cores: _containers.RepeatedCompositeFieldContainer[McCore]
    objective: McObjective
    test: McTest
    def __init__(self, tasks: _Optional[_Iterable[_Union[McTask, _Mapping]]] = ..., cores: _Optional[_Iterable[_Union[McCore, _Mapping]]] = ..., objective: _Optional[_Union[McObjective, str]] = ..., test: _Optional[_Union[McTest, str]] = ...) -> None: ...

class McAssignment(_message.Message):
    __slots__ = ("task", "core")
    TASK_FIELD_NUMBER: _ClassVar[int]
    CORE_FIELD_NUMBER: _ClassVar[int]
    task: str
    core: str
    def __init__(self, task: _Optional[str] = ..., core: _Optional[str] = ...) -> None: ...

class McCoreTest(_message.Message):
    __slots__ = ("core", "lo_utilisation", "hi_utilisation_lo_mode", "hi_utilisation_hi_mode", "slack", "priority_order")
    CORE_FIELD_NUMBER: _ClassVar[int]
    LO_UTILISATION_FIELD_NUMBER: _ClassVar[int]
    HI_UTILISATION_LO_MODE_FIELD_NUMBER: _ClassVar[int]
    HI_UTILISATION_HI_MODE_FIELD_NUMBER: _ClassVar[int]
    SLACK_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_ORDER_FIELD_NUMBER: _ClassVar[int]
    core: str
    lo_utilisation: float
    hi_utilisation_lo_mode: float
    hi_utilisation_hi_mode: float
    slack: float
    priority_order: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, core: _Optional[str] = ..., lo_utilisation: _Optional[float] = ..., hi_utilisation_lo_mode: _Optional[float] = ..., hi_utilisation_hi_mode: _Optional[float] = ..., slack: _Optional[float] = ..., priority_order: _Optional[_Iterable[str]] = ...) -> None: ...

class McDroppedTask(_message.Message):
    __slots__ = ("name", "kind", "message", "drop_cost")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DROP_COST_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    message: str
    drop_cost: int
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., message: _Optional[str] = ..., drop_cost: _Optional[int] = ...) -> None: ...

class McSolution(_message.Message):
    __slots__ = ("assignments", "dropped", "cores", "unplaced")
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    CORES_FIELD_NUMBER: _ClassVar[int]
    UNPLACED_FIELD_NUMBER: _ClassVar[int]
    assignments: _containers.RepeatedCompositeFieldContainer[McAssignment]
    dropped: _containers.RepeatedScalarFieldContainer[str]
    cores: _containers.RepeatedCompositeFieldContainer[McCoreTest]
    unplaced: _containers.RepeatedCompositeFieldContainer[McDroppedTask]
    def __init__(self, assignments: _Optional[_Iterable[_Union[McAssignment, _Mapping]]] = ..., dropped: _Optional[_Iterable[str]] = ..., cores: _Optional[_Iterable[_Union[McCoreTest, _Mapping]]] = ..., unplaced: _Optional[_Iterable[_Union[McDroppedTask, _Mapping]]] = ...) -> None: ...
