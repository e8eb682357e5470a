from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class FlJob(_message.Message):
    __slots__ = ("name", "model_bytes", "flops_per_sample", "samples_per_round", "devices_per_round", "classes_needed", "memory_bytes", "rounds")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MODEL_BYTES_FIELD_NUMBER: _ClassVar[int]
    FLOPS_PER_SAMPLE_FIELD_NUMBER: _ClassVar[int]
    SAMPLES_PER_ROUND_FIELD_NUMBER: _ClassVar[int]
    DEVICES_PER_ROUND_FIELD_NUMBER: _ClassVar[int]
    CLASSES_NEEDED_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    model_bytes: int
    flops_per_sample: float
    samples_per_round: int
    devices_per_round: int
    classes_needed: _containers.RepeatedScalarFieldContainer[int]
    memory_bytes: int
    rounds: int
    def __init__(self, name: _Optional[str] = ..., model_bytes: _Optional[int] = ..., flops_per_sample: _Optional[float] = ..., samples_per_round: _Optional[int] = ..., devices_per_round: _Optional[int] = ..., classes_needed: _Optional[_Iterable[int]] = ..., memory_bytes: _Optional[int] = ..., rounds: _Optional[int] = ...) -> None: ...

class FlDevice(_message.Message):
    __slots__ = ("name", "flops_per_s", "down_bytes_per_s", "up_bytes_per_s", "memory_bytes", "classes", "unavailable_rounds")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FLOPS_PER_S_FIELD_NUMBER: _ClassVar[int]
    DOWN_BYTES_PER_S_FIELD_NUMBER: _ClassVar[int]
    UP_BYTES_PER_S_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    CLASSES_FIELD_NUMBER: _ClassVar[int]
    UNAVAILABLE_ROUNDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    flops_per_s: float
    down_bytes_per_s: float
    up_bytes_per_s: float
    memory_bytes: int
    classes: _containers.RepeatedScalarFieldContainer[int]
    unavailable_rounds: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., flops_per_s: _Optional[float] = ..., down_bytes_per_s: _Optional[float] = ..., up_bytes_per_s: _Optional[float] = ..., memory_bytes: _Optional[int] = ..., classes: _Optional[_Iterable[int]] = ..., unavailable_rounds: _Optional[_Iterable[int]] = ...) -> None: ...

class FlInstance(_message.Message):
    __slots__ = ("jobs", "devices", "rounds", "max_rounds_per_device")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    MAX_ROUNDS_PER_DEVICE_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[FlJob]
    devices: _containers.RepeatedCompositeFieldContainer[FlDevice]
    rounds: int
    max_rounds_per_device: int
    def __init__(self, jobs: _Optional[_Iterable[_Union[FlJob, _Mapping]]] = ..., devices: _Optional[_Iterable[_Union[FlDevice, _Mapping]]] = ..., rounds: _Optional[int] = ..., max_rounds_per_device: _Optional[int] = ...) -> None: ...

class FlAssignment(_message.Message):
    __slots__ = ("round", "job", "devices", "round_time_s")
    ROUND_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    ROUND_TIME_S_FIELD_NUMBER: _ClassVar[int]
    round: int
    job: str
    devices: _containers.RepeatedScalarFieldContainer[str]
    round_time_s: float
    def __init__(self, round: _Optional[int] = ..., job: _Optional[str] = ..., devices: _Optional[_Iterable[str]] = ..., round_time_s: _Optional[float] = ...) -> None: ...

class FlJobTime(_message.Message):
    __slots__ = ("job", "completion_time_s", "rounds")
    JOB_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TIME_S_FIELD_NUMBER: _ClassVar[int]
    ROUNDS_FIELD_NUMBER: _ClassVar[int]
    job: str
    completion_time_s: float
    rounds: int
    def __init__(self, job: _Optional[str] = ..., completion_time_s: _Optional[float] = ..., rounds: _Optional[int] = ...) -> None: ...

class FlSolution(_message.Message):
    __slots__ = ("assignments", "jobs", "participation_jain")
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    PARTICIPATION_JAIN_FIELD_NUMBER: _ClassVar[int]
    assignments: _containers.RepeatedCompositeFieldContainer[FlAssignment]
    jobs: _containers.RepeatedCompositeFieldContainer[FlJobTime]
    participation_jain: float
    def __init__(self, assignments: _Optional[_Iterable[_Union[FlAssignment, _Mapping]]] = ..., jobs: _Optional[_Iterable[_Union[FlJobTime, _Mapping]]] = ..., participation_jain: _Optional[float] = ...) -> None: ...
