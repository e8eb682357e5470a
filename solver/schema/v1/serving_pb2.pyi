from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ServingRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SERVING_ROLE_UNSPECIFIED: _ClassVar[ServingRole]
    MIXED: _ClassVar[ServingRole]
    PREFILL: _ClassVar[ServingRole]
    DECODE: _ClassVar[ServingRole]
SERVING_ROLE_UNSPECIFIED: ServingRole
MIXED: ServingRole
PREFILL: ServingRole
DECODE: ServingRole

class ServingGpuType(_message.Message):
    __slots__ = ("name", "count", "cost_per_hour", "memory_bytes")
    NAME_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    COST_PER_HOUR_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    name: str
    count: int
    cost_per_hour: float
    memory_bytes: int
    def __init__(self, name: _Optional[str] = ..., count: _Optional[int] = ..., cost_per_hour: _Optional[float] = ..., memory_bytes: _Optional[int] = ...) -> None: ...

class ServingPrefillPoint(_message.Message):
    __slots__ = ("tokens", "ms")
    TOKENS_FIELD_NUMBER: _ClassVar[int]
    MS_FIELD_NUMBER: _ClassVar[int]
    tokens: int
    ms: float
    def __init__(self, tokens: _Optional[int] = ..., ms: _Optional[float] = ...) -> None: ...

class ServingProfile(_message.Message):
    __slots__ = ("gpu_type", "tensor_parallel", "prefill", "decode_base_ms", "decode_per_sequence_ms", "decode_per_1k_context_ms", "kv_bytes_per_token", "weights_bytes", "source")
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    PREFILL_FIELD_NUMBER: _ClassVar[int]
    DECODE_BASE_MS_FIELD_NUMBER: _ClassVar[int]
    DECODE_PER_SEQUENCE_MS_FIELD_NUMBER: _ClassVar[int]
    DECODE_PER_1K_CONTEXT_MS_FIELD_NUMBER: _ClassVar[int]
    KV_BYTES_PER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_BYTES_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    gpu_type: str
    tensor_parallel: int
    prefill: _containers.RepeatedCompositeFieldContainer[ServingPrefillPoint]
    decode_base_ms: float
    decode_per_sequence_ms: float
    decode_per_1k_context_ms: float
    kv_bytes_per_token: int
    weights_bytes: int
    source: str
    def __init__(self, gpu_type: _Optional[str] = ..., tensor_parallel: _Optional[int] = ..., prefill: _Optional[_Iterable[_Union[ServingPrefillPoint, _Mapping]]] = ..., decode_base_ms: _Optional[float] = ..., decode_per_sequence_ms: _Optional[float] = ..., decode_per_1k_context_ms: _Optional[float] = ..., kv_bytes_per_token: _Optional[int] = ..., weights_bytes: _Optional[int] = ..., source: _Optional[str] = ...) -> None: ...

class ServingClass(_message.Message):
    __slots__ = ("name", "input_tokens", "output_tokens", "share")
    NAME_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    SHARE_FIELD_NUMBER: _ClassVar[int]
    name: str
    input_tokens: int
    output_tokens: int
    share: float
    def __init__(self, name: _Optional[str] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., share: _Optional[float] = ...) -> None: ...

class ServingSlo(_message.Message):
    __slots__ = ("ttft_ms", "tpot_ms", "percentile")
    TTFT_MS_FIELD_NUMBER: _ClassVar[int]
    TPOT_MS_FIELD_NUMBER: _ClassVar[int]
    PERCENTILE_FIELD_NUMBER: _ClassVar[int]
    ttft_ms: float
    tpot_ms: float
    percentile: float
    def __init__(self, ttft_ms: _Optional[float] = ..., tpot_ms: _Optional[float] = ..., percentile: _Optional[float] = ...) -> None: ...

class ServingInstance(_message.Message):
    __slots__ = ("gpu_types", "profiles", "classes", "arrival_rate_per_s", "slo", "gpu_budget", "mixed_prefill_shares", "memory_utilization")
    GPU_TYPES_FIELD_NUMBER: _ClassVar[int]
    PROFILES_FIELD_NUMBER: _ClassVar[int]
    CLASSES_FIELD_NUMBER: _ClassVar[int]
    ARRIVAL_RATE_PER_S_FIELD_NUMBER: _ClassVar[int]
    SLO_FIELD_NUMBER: _ClassVar[int]
    GPU_BUDGET_FIELD_NUMBER: _ClassVar[int]
    MIXED_PREFILL_SHARES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_UTILIZATION_FIELD_NUMBER: _ClassVar[int]
    gpu_types: _containers.RepeatedCompositeFieldContainer[ServingGpuType]
    profiles: _containers.RepeatedCompositeFieldContainer[ServingProfile]
    classes: _containers.RepeatedCompositeFieldContainer[ServingClass]
    arrival_rate_per_s: float
    slo: ServingSlo
    gpu_budget: int
    mixed_prefill_shares: _containers.RepeatedScalarFieldContainer[float]
    memory_utilization: float
    def __init__(self, gpu_types: _Optional[_Iterable[_Union[ServingGpuType, _Mapping]]] = ..., profiles: _Optional[_Iterable[_Union[ServingProfile, _Mapping]]] = ..., classes: _Optional[_Iterable[_Union[ServingClass, _Mapping]]] = ..., arrival_rate_per_s: _Optional[float] = ..., slo: _Optional[_Union[ServingSlo, _Mapping]] = ..., gpu_budget: _Optional[int] = ..., mixed_prefill_shares: _Optional[_Iterable[float]] = ..., memory_utilization: _Optional[float] = ...) -> None: ...

class ServingDeployment(_message.Message):
    __slots__ = ("name", "gpu_type", "tensor_parallel", "role", "prefill_share", "instances", "prefill_load", "decode_load", "kv_load")
    NAME_FIELD_NUMBER: _ClassVar[int]
    GPU_TYPE_FIELD_NUMBER: _ClassVar[int]
    TENSOR_PARALLEL_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    PREFILL_SHARE_FIELD_NUMBER: _ClassVar[int]
    INSTANCES_FIELD_NUMBER: _ClassVar[int]
    PREFILL_LOAD_FIELD_NUMBER: _ClassVar[int]
    DECODE_LOAD_FIELD_NUMBER: _ClassVar[int]
    KV_LOAD_FIELD_NUMBER: _ClassVar[int]
    name: str
    gpu_type: str
    tensor_parallel: int
    role: ServingRole
    prefill_share: float
    instances: int
    prefill_load: float
    decode_load: float
    kv_load: float
    def __init__(self, name: _Optional[str] = ..., gpu_type: _Optional[str] = ..., tensor_parallel: _Optional[int] = ..., role: _Optional[_Union[ServingRole, str]] = ..., prefill_share: _Optional[float] = ..., instances: _Optional[int] = ..., prefill_load: _Optional[float] = ..., decode_load: _Optional[float] = ..., kv_load: _Optional[float] = ...) -> None: ...

class ServingRoute(_message.Message):
    __slots__ = ("class_name", "deployment", "rate_per_s")
    CLASS_NAME_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    RATE_PER_S_FIELD_NUMBER: _ClassVar[int]
    class_name: str
    deployment: str
    rate_per_s: float
    def __init__(self, class_name: _Optional[str] = ..., deployment: _Optional[str] = ..., rate_per_s: _Optional[float] = ...) -> None: ...

class ServingSolution(_message.Message):
    __slots__ = ("deployments", "routes", "goodput_per_s", "cost_per_hour", "gpus")
    DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    ROUTES_FIELD_NUMBER: _ClassVar[int]
    GOODPUT_PER_S_FIELD_NUMBER: _ClassVar[int]
    COST_PER_HOUR_FIELD_NUMBER: _ClassVar[int]
    GPUS_FIELD_NUMBER: _ClassVar[int]
    deployments: _containers.RepeatedCompositeFieldContainer[ServingDeployment]
    routes: _containers.RepeatedCompositeFieldContainer[ServingRoute]
    goodput_per_s: float
    cost_per_hour: float
    gpus: int
    def __init__(self, deployments: _Optional[_Iterable[_Union[ServingDeployment, _Mapping]]] = ..., routes: _Optional[_Iterable[_Union[ServingRoute, _Mapping]]] = ..., goodput_per_s: _Optional[float] = ..., cost_per_hour: _Optional[float] = ..., gpus: _Optional[int] = ...) -> None: ...
