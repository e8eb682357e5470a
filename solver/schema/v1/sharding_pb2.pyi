from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ShardingType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SHARDING_TYPE_UNSPECIFIED: _ClassVar[ShardingType]
    TABLE_WISE: _ClassVar[ShardingType]
    ROW_WISE: _ClassVar[ShardingType]
    COLUMN_WISE: _ClassVar[ShardingType]
    TABLE_ROW_WISE: _ClassVar[ShardingType]
    DATA_PARALLEL: _ClassVar[ShardingType]
SHARDING_TYPE_UNSPECIFIED: ShardingType
TABLE_WISE: ShardingType
ROW_WISE: ShardingType
COLUMN_WISE: ShardingType
TABLE_ROW_WISE: ShardingType
DATA_PARALLEL: ShardingType

class ShardingTable(_message.Message):
    __slots__ = ("name", "rows", "dim", "bytes_per_element", "pooling_factor", "access_skew", "allowed")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    DIM_FIELD_NUMBER: _ClassVar[int]
    BYTES_PER_ELEMENT_FIELD_NUMBER: _ClassVar[int]
    POOLING_FACTOR_FIELD_NUMBER: _ClassVar[int]
    ACCESS_SKEW_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_FIELD_NUMBER: _ClassVar[int]
    name: str
    rows: int
    dim: int
    bytes_per_element: int
    pooling_factor: float
    access_skew: float
    allowed: _containers.RepeatedScalarFieldContainer[ShardingType]
    def __init__(self, name: _Optional[str] = ..., rows: _Optional[int] = ..., dim: _Optional[int] = ..., bytes_per_element: _Optional[int] = ..., pooling_factor: _Optional[float] = ..., access_skew: _Optional[float] = ..., allowed: _Optional[_Iterable[_Union[ShardingType, str]]] = ...) -> None: ...

class ShardingDevice(_message.Message):
    __slots__ = ("name", "host", "hbm_bytes", "hbm_bandwidth_bytes_per_ms")
    NAME_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    HBM_BYTES_FIELD_NUMBER: _ClassVar[int]
    HBM_BANDWIDTH_BYTES_PER_MS_FIELD_NUMBER: _ClassVar[int]
    name: str
    host: str
    hbm_bytes: int
    hbm_bandwidth_bytes_per_ms: float
    def __init__(self, name: _Optional[str] = ..., host: _Optional[str] = ..., hbm_bytes: _Optional[int] = ..., hbm_bandwidth_bytes_per_ms: _Optional[float] = ...) -> None: ...

class ShardingCostModel(_message.Message):
    __slots__ = ("intra_host_bandwidth_bytes_per_ms", "cross_host_bandwidth_bytes_per_ms", "input_bytes", "comm_bytes", "bwd_compute_multiplier", "batched_copy_factor", "dp_elementwise_factor", "optimizer_multiplier", "min_column_shard_dim")
    INTRA_HOST_BANDWIDTH_BYTES_PER_MS_FIELD_NUMBER: _ClassVar[int]
    CROSS_HOST_BANDWIDTH_BYTES_PER_MS_FIELD_NUMBER: _ClassVar[int]
    INPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    COMM_BYTES_FIELD_NUMBER: _ClassVar[int]
    BWD_COMPUTE_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    BATCHED_COPY_FACTOR_FIELD_NUMBER: _ClassVar[int]
    DP_ELEMENTWISE_FACTOR_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZER_MULTIPLIER_FIELD_NUMBER: _ClassVar[int]
    MIN_COLUMN_SHARD_DIM_FIELD_NUMBER: _ClassVar[int]
    intra_host_bandwidth_bytes_per_ms: float
    cross_host_bandwidth_bytes_per_ms: float
    input_bytes: float
    comm_bytes: float
    bwd_compute_multiplier: float
    batched_copy_factor: float
    dp_elementwise_factor: float
    optimizer_multiplier: float
    min_column_shard_dim: int
    def __init__(self, intra_host_bandwidth_bytes_per_ms: _Optional[float] = ..., cross_host_bandwidth_bytes_per_ms: _Optional[float] = ..., input_bytes: _Optional[float] = ..., comm_bytes: _Optional[float] = ..., bwd_compute_multiplier: _Optional[float] = ..., batched_copy_factor: _Optional[float] = ..., dp_elementwise_factor: _Optional[float] = ..., optimizer_multiplier: _Optional[float] = ..., min_column_shard_dim: _Optional[int] = ...) -> None: ...

class ShardingInstance(_message.Message):
    __slots__ = ("tables", "devices", "batch_size", "cost_model")
    TABLES_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    COST_MODEL_FIELD_NUMBER: _ClassVar[int]
    tables: _containers.RepeatedCompositeFieldContainer[ShardingTable]
    devices: _containers.RepeatedCompositeFieldContainer[ShardingDevice]
    batch_size: int
    cost_model: ShardingCostModel
    def __init__(self, tables: _Optional[_Iterable[_Union[ShardingTable, _Mapping]]] = ..., devices: _Optional[_Iterable[_Union[ShardingDevice, _Mapping]]] = ..., batch_size: _Optional[int] = ..., cost_model: _Optional[_Union[ShardingCostModel, _Mapping]] = ...) -> None: ...

class ShardingShard(_message.Message):
    __slots__ = ("device", "row_offset", "rows", "col_offset", "cols", "cost_ms", "comm_ms", "hbm_bytes")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    ROW_OFFSET_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    COL_OFFSET_FIELD_NUMBER: _ClassVar[int]
    COLS_FIELD_NUMBER: _ClassVar[int]
    COST_MS_FIELD_NUMBER: _ClassVar[int]
    COMM_MS_FIELD_NUMBER: _ClassVar[int]
    HBM_BYTES_FIELD_NUMBER: _ClassVar[int]
    device: str
    row_offset: int
    rows: int
    col_offset: int
    cols: int
    cost_ms: float
    comm_ms: float
    hbm_bytes: int
    def __init__(self, device: _Optional[str] = ..., row_offset: _Optional[int] = ..., rows: _Optional[int] = ..., col_offset: _Optional[int] = ..., cols: _Optional[int] = ..., cost_ms: _Optional[float] = ..., comm_ms: _Optional[float] = ..., hbm_bytes: _Optional[int] = ...) -> None: ...

class ShardingPlan(_message.Message):
    __slots__ = ("table", "sharding_type", "shards")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    SHARDING_TYPE_FIELD_NUMBER: _ClassVar[int]
    SHARDS_FIELD_NUMBER: _ClassVar[int]
    table: str
    sharding_type: ShardingType
    shards: _containers.RepeatedCompositeFieldContainer[ShardingShard]
    def __init__(self, table: _Optional[str] = ..., sharding_type: _Optional[_Union[ShardingType, str]] = ..., shards: _Optional[_Iterable[_Union[ShardingShard, _Mapping]]] = ...) -> None: ...

class ShardingDeviceLoad(_message.Message):
    __slots__ = ("device", "cost_ms", "comm_ms", "hbm_bytes", "hbm_capacity_bytes")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    COST_MS_FIELD_NUMBER: _ClassVar[int]
    COMM_MS_FIELD_NUMBER: _ClassVar[int]
    HBM_BYTES_FIELD_NUMBER: _ClassVar[int]
    HBM_CAPACITY_BYTES_FIELD_NUMBER: _ClassVar[int]
    device: str
    cost_ms: float
    comm_ms: float
    hbm_bytes: int
    hbm_capacity_bytes: int
    def __init__(self, device: _Optional[str] = ..., cost_ms: _Optional[float] = ..., comm_ms: _Optional[float] = ..., hbm_bytes: _Optional[int] = ..., hbm_capacity_bytes: _Optional[int] = ...) -> None: ...

class ShardingSolution(_message.Message):
    __slots__ = ("plans", "devices")
    PLANS_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    plans: _containers.RepeatedCompositeFieldContainer[ShardingPlan]
    devices: _containers.RepeatedCompositeFieldContainer[ShardingDeviceLoad]
    def __init__(self, plans: _Optional[_Iterable[_Union[ShardingPlan, _Mapping]]] = ..., devices: _Optional[_Iterable[_Union[ShardingDeviceLoad, _Mapping]]] = ...) -> None: ...
