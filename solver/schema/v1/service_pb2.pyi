from placement.solver.schema.v1 import placement_pb2 as _placement_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SolutionStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SOLUTION_STATUS_UNSPECIFIED: _ClassVar[SolutionStatus]
    SOLUTION_STATUS_OPTIMAL: _ClassVar[SolutionStatus]
    SOLUTION_STATUS_FEASIBLE: _ClassVar[SolutionStatus]
    SOLUTION_STATUS_INFEASIBLE: _ClassVar[SolutionStatus]
    SOLUTION_STATUS_NO_SOLUTION: _ClassVar[SolutionStatus]

class StopReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STOP_REASON_UNSPECIFIED: _ClassVar[StopReason]
    STOP_REASON_PROVEN: _ClassVar[StopReason]
    STOP_REASON_TIME_LIMIT: _ClassVar[StopReason]
    STOP_REASON_GAP_REACHED: _ClassVar[StopReason]
    STOP_REASON_CANCELLED: _ClassVar[StopReason]
    STOP_REASON_ERROR: _ClassVar[StopReason]
    STOP_REASON_SEARCH_EXHAUSTED: _ClassVar[StopReason]
    STOP_REASON_HEURISTIC_ONLY: _ClassVar[StopReason]

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    JOB_STATE_UNSPECIFIED: _ClassVar[JobState]
    JOB_STATE_QUEUED: _ClassVar[JobState]
    JOB_STATE_RUNNING: _ClassVar[JobState]
    JOB_STATE_SUCCEEDED: _ClassVar[JobState]
    JOB_STATE_FAILED: _ClassVar[JobState]
    JOB_STATE_CANCELLED: _ClassVar[JobState]
SOLUTION_STATUS_UNSPECIFIED: SolutionStatus
SOLUTION_STATUS_OPTIMAL: SolutionStatus
SOLUTION_STATUS_FEASIBLE: SolutionStatus
SOLUTION_STATUS_INFEASIBLE: SolutionStatus
SOLUTION_STATUS_NO_SOLUTION: SolutionStatus
STOP_REASON_UNSPECIFIED: StopReason
STOP_REASON_PROVEN: StopReason
STOP_REASON_TIME_LIMIT: StopReason
STOP_REASON_GAP_REACHED: StopReason
STOP_REASON_CANCELLED: StopReason
STOP_REASON_ERROR: StopReason
STOP_REASON_SEARCH_EXHAUSTED: StopReason
STOP_REASON_HEURISTIC_ONLY: StopReason
JOB_STATE_UNSPECIFIED: JobState
JOB_STATE_QUEUED: JobState
JOB_STATE_RUNNING: JobState
JOB_STATE_SUCCEEDED: JobState
JOB_STATE_FAILED: JobState
JOB_STATE_CANCELLED: JobState

class SolveParameters(_message.Message):
    __slots__ = ("time_limit_s", "backend", "milp_solver", "threads", "seed", "relative_gap", "deterministic")
    TIME_LIMIT_S_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    MILP_SOLVER_FIELD_NUMBER: _ClassVar[int]
    THREADS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    RELATIVE_GAP_FIELD_NUMBER: _ClassVar[int]
    DETERMINISTIC_FIELD_NUMBER: _ClassVar[int]
    time_limit_s: float
    backend: str
    milp_solver: str
    threads: int
    seed: int
    relative_gap: float
    deterministic: bool
    def __init__(self, time_limit_s: _Optional[float] = ..., backend: _Optional[str] = ..., milp_solver: _Optional[str] = ..., threads: _Optional[int] = ..., seed: _Optional[int] = ..., relative_gap: _Optional[float] = ..., deterministic: _Optional[bool] = ...) -> None: ...

class SolveRequest(_message.Message):
    __slots__ = ("instance", "parameters", "request_id", "start_job_id", "start_solution")
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    START_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    START_SOLUTION_FIELD_NUMBER: _ClassVar[int]
    instance: _placement_pb2.Instance
    parameters: SolveParameters
    request_id: str
    start_job_id: str
    start_solution: _placement_pb2.Solution
    def __init__(self, instance: _Optional[_Union[_placement_pb2.Instance, _Mapping]] = ..., parameters: _Optional[_Union[SolveParameters, _Mapping]] = ..., request_id: _Optional[str] = ..., start_job_id: _Optional[str] = ..., start_solution: _Optional[_Union[_placement_pb2.Solution, _Mapping]] = ...) -> None: ...

class DroppedPiece(_message.Message):
    __slots__ = ("name", "reason")
    NAME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    name: str
    reason: str
    def __init__(self, name: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class WarmStart(_message.Message):
    __slots__ = ("source", "pieces", "kept", "dropped", "feasible", "objective", "improved", "message")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    PIECES_FIELD_NUMBER: _ClassVar[int]
    KEPT_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    FEASIBLE_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    IMPROVED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    source: str
    pieces: int
    kept: int
    dropped: _containers.RepeatedCompositeFieldContainer[DroppedPiece]
    feasible: bool
    objective: float
    improved: bool
    message: str
    def __init__(self, source: _Optional[str] = ..., pieces: _Optional[int] = ..., kept: _Optional[int] = ..., dropped: _Optional[_Iterable[_Union[DroppedPiece, _Mapping]]] = ..., feasible: _Optional[bool] = ..., objective: _Optional[float] = ..., improved: _Optional[bool] = ..., message: _Optional[str] = ...) -> None: ...

class Incumbent(_message.Message):
    __slots__ = ("elapsed_s", "objective", "bound", "gap", "source", "solution")
    ELAPSED_S_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    BOUND_FIELD_NUMBER: _ClassVar[int]
    GAP_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SOLUTION_FIELD_NUMBER: _ClassVar[int]
    elapsed_s: float
    objective: float
    bound: float
    gap: float
    source: str
    solution: _placement_pb2.Solution
    def __init__(self, elapsed_s: _Optional[float] = ..., objective: _Optional[float] = ..., bound: _Optional[float] = ..., gap: _Optional[float] = ..., source: _Optional[str] = ..., solution: _Optional[_Union[_placement_pb2.Solution, _Mapping]] = ...) -> None: ...

class ObjectiveTerm(_message.Message):
    __slots__ = ("name", "value", "sense")
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    SENSE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: float
    sense: str
    def __init__(self, name: _Optional[str] = ..., value: _Optional[float] = ..., sense: _Optional[str] = ...) -> None: ...

class SolveResponse(_message.Message):
    __slots__ = ("request_id", "family", "status", "stop_reason", "solution", "objective", "objective_terms", "sense", "bound", "gap", "backend", "phase_times_s", "history", "message", "time_limit_s", "warm_start")
    class PhaseTimesSEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STOP_REASON_FIELD_NUMBER: _ClassVar[int]
    SOLUTION_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_TERMS_FIELD_NUMBER: _ClassVar[int]
    SENSE_FIELD_NUMBER: _ClassVar[int]
    BOUND_FIELD_NUMBER: _ClassVar[int]
    GAP_FIELD_NUMBER: _ClassVar[int]
    BACKEND_FIELD_NUMBER: _ClassVar[int]
    PHASE_TIMES_S_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TIME_LIMIT_S_FIELD_NUMBER: _ClassVar[int]
    WARM_START_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    family: str
    status: SolutionStatus
    stop_reason: StopReason
    solution: _placement_pb2.Solution
    objective: float
    objective_terms: _containers.RepeatedCompositeFieldContainer[ObjectiveTerm]
    sense: str
    bound: float
    gap: float
    backend: str
    phase_times_s: _containers.ScalarMap[str, float]
    history: _containers.RepeatedCompositeFieldContainer[Incumbent]
    message: str
    time_limit_s: float
    warm_start: WarmStart
    def __init__(self, request_id: _Optional[str] = ..., family: _Optional[str] = ..., status: _Optional[_Union[SolutionStatus, str]] = ..., stop_reason: _Optional[_Union[StopReason, str]] = ..., solution: _Optional[_Union[_placement_pb2.Solution, _Mapping]] = ..., objective: _Optional[float] = ..., objective_terms: _Optional[_Iterable[_Union[ObjectiveTerm, _Mapping]]] = ..., sense: _Optional[str] = ..., bound: _Optional[float] = ..., gap: _Optional[float] = ..., backend: _Optional[str] = ..., phase_times_s: _Optional[_Mapping[str, float]] = ..., history: _Optional[_Iterable[_Union[Incumbent, _Mapping]]] = ..., message: _Optional[str] = ..., time_limit_s: _Optional[float] = ..., warm_start: _Optional[_Union[WarmStart, _Mapping]] = ...) -> None: ...

class SolveEvent(_message.Message):
    __slots__ = ("incumbent", "result")
    INCUMBENT_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    incumbent: Incumbent
    result: SolveResponse
    def __init__(self, incumbent: _Optional[_Union[Incumbent, _Mapping]] = ..., result: _Optional[_Union[SolveResponse, _Mapping]] = ...) -> None: ...

class CheckRequest(_message.Message):
    __slots__ = ("instance", "solution")
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    SOLUTION_FIELD_NUMBER: _ClassVar[int]
    instance: _placement_pb2.Instance
    solution: _placement_pb2.Solution
    def __init__(self, instance: _Optional[_Union[_placement_pb2.Instance, _Mapping]] = ..., solution: _Optional[_Union[_placement_pb2.Solution, _Mapping]] = ...) -> None: ...

class CheckResponse(_message.Message):
    __slots__ = ("feasible", "violations", "objective_terms", "objective", "sense")
    FEASIBLE_FIELD_NUMBER: _ClassVar[int]
    VIOLATIONS_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_TERMS_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    SENSE_FIELD_NUMBER: _ClassVar[int]
    feasible: bool
    violations: _containers.RepeatedScalarFieldContainer[str]
    objective_terms: _containers.RepeatedCompositeFieldContainer[ObjectiveTerm]
    objective: float
    sense: str
    def __init__(self, feasible: _Optional[bool] = ..., violations: _Optional[_Iterable[str]] = ..., objective_terms: _Optional[_Iterable[_Union[ObjectiveTerm, _Mapping]]] = ..., objective: _Optional[float] = ..., sense: _Optional[str] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ("job_id", "state", "created_at", "started_at", "finished_at", "attempts", "result", "error", "instance_name", "family")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_NAME_FIELD_NUMBER: _ClassVar[int]
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    state: JobState
    created_at: float
    started_at: float
    finished_at: float
    attempts: int
    result: SolveResponse
    error: str
    instance_name: str
    family: str
    def __init__(self, job_id: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., created_at: _Optional[float] = ..., started_at: _Optional[float] = ..., finished_at: _Optional[float] = ..., attempts: _Optional[int] = ..., result: _Optional[_Union[SolveResponse, _Mapping]] = ..., error: _Optional[str] = ..., instance_name: _Optional[str] = ..., family: _Optional[str] = ...) -> None: ...

class SubmitJobRequest(_message.Message):
    __slots__ = ("request",)
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    request: SolveRequest
    def __init__(self, request: _Optional[_Union[SolveRequest, _Mapping]] = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class WatchJobRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class JobEvent(_message.Message):
    __slots__ = ("job", "incumbent")
    JOB_FIELD_NUMBER: _ClassVar[int]
    INCUMBENT_FIELD_NUMBER: _ClassVar[int]
    job: Job
    incumbent: Incumbent
    def __init__(self, job: _Optional[_Union[Job, _Mapping]] = ..., incumbent: _Optional[_Union[Incumbent, _Mapping]] = ...) -> None: ...

class CancelJobRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ("state", "page_size", "page_token")
    STATE_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    state: JobState
    page_size: int
    page_token: str
    def __init__(self, state: _Optional[_Union[JobState, str]] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs", "next_page_token")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[Job]
    next_page_token: str
    def __init__(self, jobs: _Optional[_Iterable[_Union[Job, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...
