from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PartitionMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PARTITION_MODE_UNSPECIFIED: _ClassVar[PartitionMode]
    TRAINING_PIPELINE: _ClassVar[PartitionMode]
    INFERENCE_LATENCY: _ClassVar[PartitionMode]
    LLM_SERVING: _ClassVar[PartitionMode]
    LLM_SERVING_FLOW: _ClassVar[PartitionMode]
    EDGE_SPLIT_QUANTIZED: _ClassVar[PartitionMode]

class PartitionContiguity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    CONTIGUITY_UNSPECIFIED: _ClassVar[PartitionContiguity]
    CONTIGUITY_ORDER: _ClassVar[PartitionContiguity]
    CONTIGUITY_CONVEX: _ClassVar[PartitionContiguity]
    CONTIGUITY_NONE: _ClassVar[PartitionContiguity]

class PartitionTransferAccounting(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRANSFER_ACCOUNTING_UNSPECIFIED: _ClassVar[PartitionTransferAccounting]
    TRANSFER_PER_EDGE: _ClassVar[PartitionTransferAccounting]
    TRANSFER_PER_TENSOR_VIA_HOST: _ClassVar[PartitionTransferAccounting]
PARTITION_MODE_UNSPECIFIED: PartitionMode
TRAINING_PIPELINE: PartitionMode
INFERENCE_LATENCY: PartitionMode
LLM_SERVING: PartitionMode
LLM_SERVING_FLOW: PartitionMode
EDGE_SPLIT_QUANTIZED: PartitionMode
CONTIGUITY_UNSPECIFIED: PartitionContiguity
CONTIGUITY_ORDER: PartitionContiguity
CONTIGUITY_CONVEX: PartitionContiguity
CONTIGUITY_NONE: PartitionContiguity
TRANSFER_ACCOUNTING_UNSPECIFIED: PartitionTransferAccounting
TRANSFER_PER_EDGE: PartitionTransferAccounting
TRANSFER_PER_TENSOR_VIA_HOST: PartitionTransferAccounting

class PartitionLayerTime(_message.Message):
    __slots__ = ("device_type", "forward_s", "backward_s")
    DEVICE_TYPE_FIELD_NUMBER: _ClassVar[int]
    FORWARD_S_FIELD_NUMBER: _ClassVar[int]
    BACKWARD_S_FIELD_NUMBER: _ClassVar[int]
    device_type: str
    forward_s: float
    backward_s: float
    def __init__(self, device_type: _Optional[str] = ..., forward_s: _Optional[float] = ..., backward_s: _Optional[float] = ...) -> None: ...

class PartitionLayer(_message.Message):
    __slots__ = ("name", "param_bytes", "activation_bytes", "forward_flops", "backward_flops", "kv_cache_bytes_per_token", "extra_memory_bytes", "colocation_group", "times", "allowed_device_types", "backward")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARAM_BYTES_FIELD_NUMBER: _ClassVar[int]
    ACTIVATION_BYTES_FIELD_NUMBER: _ClassVar[int]
    FORWARD_FLOPS_FIELD_NUMBER: _ClassVar[int]
    BACKWARD_FLOPS_FIELD_NUMBER: _ClassVar[int]
    KV_CACHE_BYTES_PER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    EXTRA_MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    COLOCATION_GROUP_FIELD_NUMBER: _ClassVar[int]
    TIMES_FIELD_NUMBER: _ClassVar[int]
    ALLOWED_DEVICE_TYPES_FIELD_NUMBER: _ClassVar[int]
    BACKWARD_FIELD_NUMBER: _ClassVar[int]
    name: str
    param_bytes: int
    activation_bytes: int
    forward_flops: float
    backward_flops: float
    kv_cache_bytes_per_token: int
    extra_memory_bytes: int
    colocation_group: str
    times: _containers.RepeatedCompositeFieldContainer[PartitionLayerTime]
    allowed_device_types: _containers.RepeatedScalarFieldContainer[str]
    backward: bool
    def __init__(self, name: _Optional[str] = ..., param_bytes: _Optional[int] = ..., activation_bytes: _Optional[int] = ..., forward_flops: _Optional[float] = ..., backward_flops: _Optional[float] = ..., kv_cache_bytes_per_token: _Optional[int] = ..., extra_memory_bytes: _Optional[int] = ..., colocation_group: _Optional[str] = ..., times: _Optional[_Iterable[_Union[PartitionLayerTime, _Mapping]]] = ..., allowed_device_types: _Optional[_Iterable[str]] = ..., backward: _Optional[bool] = ...) -> None: ...

class PartitionEdge(_message.Message):
    __slots__ = ("src", "dst", "bytes", "transfer_s")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_S_FIELD_NUMBER: _ClassVar[int]
    src: str
    dst: str
    bytes: int
    transfer_s: float
    def __init__(self, src: _Optional[str] = ..., dst: _Optional[str] = ..., bytes: _Optional[int] = ..., transfer_s: _Optional[float] = ...) -> None: ...

class PartitionDevice(_message.Message):
    __slots__ = ("name", "type", "memory_bytes", "flops_per_s", "node", "host")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    FLOPS_PER_S_FIELD_NUMBER: _ClassVar[int]
    NODE_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: str
    memory_bytes: int
    flops_per_s: float
    node: str
    host: bool
    def __init__(self, name: _Optional[str] = ..., type: _Optional[str] = ..., memory_bytes: _Optional[int] = ..., flops_per_s: _Optional[float] = ..., node: _Optional[str] = ..., host: _Optional[bool] = ...) -> None: ...

class PartitionLinks(_message.Message):
    __slots__ = ("inter_node_bandwidth_bytes_per_s", "intra_node_bandwidth_bytes_per_s")
    INTER_NODE_BANDWIDTH_BYTES_PER_S_FIELD_NUMBER: _ClassVar[int]
    INTRA_NODE_BANDWIDTH_BYTES_PER_S_FIELD_NUMBER: _ClassVar[int]
    inter_node_bandwidth_bytes_per_s: float
    intra_node_bandwidth_bytes_per_s: float
    def __init__(self, inter_node_bandwidth_bytes_per_s: _Optional[float] = ..., intra_node_bandwidth_bytes_per_s: _Optional[float] = ...) -> None: ...

class PartitionWorkload(_message.Message):
    __slots__ = ("mode", "batch_size", "context_length", "in_flight_microbatches", "gradient_bytes_per_param_byte", "optimizer_bytes_per_param_byte", "non_contiguous", "contiguity", "transfer_accounting", "serving_plan")
    MODE_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_LENGTH_FIELD_NUMBER: _ClassVar[int]
    IN_FLIGHT_MICROBATCHES_FIELD_NUMBER: _ClassVar[int]
    GRADIENT_BYTES_PER_PARAM_BYTE_FIELD_NUMBER: _ClassVar[int]
    OPTIMIZER_BYTES_PER_PARAM_BYTE_FIELD_NUMBER: _ClassVar[int]
    NON_CONTIGUOUS_FIELD_NUMBER: _ClassVar[int]
    CONTIGUITY_FIELD_NUMBER: _ClassVar[int]
    TRANSFER_ACCOUNTING_FIELD_NUMBER: _ClassVar[int]
    SERVING_PLAN_FIELD_NUMBER: _ClassVar[int]
    mode: PartitionMode
    batch_size: int
    context_length: int
    in_flight_microbatches: int
    gradient_bytes_per_param_byte: float
    optimizer_bytes_per_param_byte: float
    non_contiguous: bool
    contiguity: PartitionContiguity
    transfer_accounting: PartitionTransferAccounting
    serving_plan: PartitionServingPlan
    def __init__(self, mode: _Optional[_Union[PartitionMode, str]] = ..., batch_size: _Optional[int] = ..., context_length: _Optional[int] = ..., in_flight_microbatches: _Optional[int] = ..., gradient_bytes_per_param_byte: _Optional[float] = ..., optimizer_bytes_per_param_byte: _Optional[float] = ..., non_contiguous: _Optional[bool] = ..., contiguity: _Optional[_Union[PartitionContiguity, str]] = ..., transfer_accounting: _Optional[_Union[PartitionTransferAccounting, str]] = ..., serving_plan: _Optional[_Union[PartitionServingPlan, _Mapping]] = ...) -> None: ...

class PartitionServingPlan(_message.Message):
    __slots__ = ("replicas", "tensor_parallel_sizes", "allreduce_latency_s")
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    TENSOR_PARALLEL_SIZES_FIELD_NUMBER: _ClassVar[int]
    ALLREDUCE_LATENCY_S_FIELD_NUMBER: _ClassVar[int]
    replicas: bool
    tensor_parallel_sizes: _containers.RepeatedScalarFieldContainer[int]
    allreduce_latency_s: float
    def __init__(self, replicas: _Optional[bool] = ..., tensor_parallel_sizes: _Optional[_Iterable[int]] = ..., allreduce_latency_s: _Optional[float] = ...) -> None: ...

class PartitionFlowDeviceType(_message.Message):
    __slots__ = ("type", "max_layers", "tokens_per_s")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    MAX_LAYERS_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_S_FIELD_NUMBER: _ClassVar[int]
    type: str
    max_layers: int
    tokens_per_s: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, type: _Optional[str] = ..., max_layers: _Optional[int] = ..., tokens_per_s: _Optional[_Iterable[float]] = ...) -> None: ...

class PartitionFlowLink(_message.Message):
    __slots__ = ("src", "dst", "tokens_per_s")
    SRC_FIELD_NUMBER: _ClassVar[int]
    DST_FIELD_NUMBER: _ClassVar[int]
    TOKENS_PER_S_FIELD_NUMBER: _ClassVar[int]
    src: str
    dst: str
    tokens_per_s: float
    def __init__(self, src: _Optional[str] = ..., dst: _Optional[str] = ..., tokens_per_s: _Optional[float] = ...) -> None: ...

class PartitionServingFlow(_message.Message):
    __slots__ = ("device_types", "links", "partial_inference")
    DEVICE_TYPES_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_INFERENCE_FIELD_NUMBER: _ClassVar[int]
    device_types: _containers.RepeatedCompositeFieldContainer[PartitionFlowDeviceType]
    links: _containers.RepeatedCompositeFieldContainer[PartitionFlowLink]
    partial_inference: bool
    def __init__(self, device_types: _Optional[_Iterable[_Union[PartitionFlowDeviceType, _Mapping]]] = ..., links: _Optional[_Iterable[_Union[PartitionFlowLink, _Mapping]]] = ..., partial_inference: _Optional[bool] = ...) -> None: ...

class PartitionLayerLoss(_message.Message):
    __slots__ = ("layer", "loss_pp")
    LAYER_FIELD_NUMBER: _ClassVar[int]
    LOSS_PP_FIELD_NUMBER: _ClassVar[int]
    layer: str
    loss_pp: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, layer: _Optional[str] = ..., loss_pp: _Optional[_Iterable[float]] = ...) -> None: ...

class PartitionEdgeSplit(_message.Message):
    __slots__ = ("device", "server", "full_precision_bits", "bit_widths", "accuracy_loss", "accuracy_budget_pp", "input_bytes", "device_compute_budget_s", "channel_budget_s", "time_weight", "energy_weight", "cost_weight", "device_joules_per_flop", "transmit_power_w", "server_cost_per_flop")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    FULL_PRECISION_BITS_FIELD_NUMBER: _ClassVar[int]
    BIT_WIDTHS_FIELD_NUMBER: _ClassVar[int]
    ACCURACY_LOSS_FIELD_NUMBER: _ClassVar[int]
    ACCURACY_BUDGET_PP_FIELD_NUMBER: _ClassVar[int]
    INPUT_BYTES_FIELD_NUMBER: _ClassVar[int]
    DEVICE_COMPUTE_BUDGET_S_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_BUDGET_S_FIELD_NUMBER: _ClassVar[int]
    TIME_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    ENERGY_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    COST_WEIGHT_FIELD_NUMBER: _ClassVar[int]
    DEVICE_JOULES_PER_FLOP_FIELD_NUMBER: _ClassVar[int]
    TRANSMIT_POWER_W_FIELD_NUMBER: _ClassVar[int]
    SERVER_COST_PER_FLOP_FIELD_NUMBER: _ClassVar[int]
    device: str
    server: str
    full_precision_bits: int
    bit_widths: _containers.RepeatedScalarFieldContainer[int]
    accuracy_loss: _containers.RepeatedCompositeFieldContainer[PartitionLayerLoss]
    accuracy_budget_pp: float
    input_bytes: int
    device_compute_budget_s: float
    channel_budget_s: float
    time_weight: float
    energy_weight: float
    cost_weight: float
    device_joules_per_flop: float
    transmit_power_w: float
    server_cost_per_flop: float
    def __init__(self, device: _Optional[str] = ..., server: _Optional[str] = ..., full_precision_bits: _Optional[int] = ..., bit_widths: _Optional[_Iterable[int]] = ..., accuracy_loss: _Optional[_Iterable[_Union[PartitionLayerLoss, _Mapping]]] = ..., accuracy_budget_pp: _Optional[float] = ..., input_bytes: _Optional[int] = ..., device_compute_budget_s: _Optional[float] = ..., channel_budget_s: _Optional[float] = ..., time_weight: _Optional[float] = ..., energy_weight: _Optional[float] = ..., cost_weight: _Optional[float] = ..., device_joules_per_flop: _Optional[float] = ..., transmit_power_w: _Optional[float] = ..., server_cost_per_flop: _Optional[float] = ...) -> None: ...

class PartitionInstance(_message.Message):
    __slots__ = ("layers", "edges", "devices", "links", "workload", "serving_flow", "edge_split")
    LAYERS_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    WORKLOAD_FIELD_NUMBER: _ClassVar[int]
    SERVING_FLOW_FIELD_NUMBER: _ClassVar[int]
    EDGE_SPLIT_FIELD_NUMBER: _ClassVar[int]
    layers: _containers.RepeatedCompositeFieldContainer[PartitionLayer]
    edges: _containers.RepeatedCompositeFieldContainer[PartitionEdge]
    devices: _containers.RepeatedCompositeFieldContainer[PartitionDevice]
    links: PartitionLinks
    workload: PartitionWorkload
    serving_flow: PartitionServingFlow
    edge_split: PartitionEdgeSplit
    def __init__(self, layers: _Optional[_Iterable[_Union[PartitionLayer, _Mapping]]] = ..., edges: _Optional[_Iterable[_Union[PartitionEdge, _Mapping]]] = ..., devices: _Optional[_Iterable[_Union[PartitionDevice, _Mapping]]] = ..., links: _Optional[_Union[PartitionLinks, _Mapping]] = ..., workload: _Optional[_Union[PartitionWorkload, _Mapping]] = ..., serving_flow: _Optional[_Union[PartitionServingFlow, _Mapping]] = ..., edge_split: _Optional[_Union[PartitionEdgeSplit, _Mapping]] = ...) -> None: ...

class PartitionAssignment(_message.Message):
    __slots__ = ("layer", "device")
    LAYER_FIELD_NUMBER: _ClassVar[int]
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    layer: str
    device: str
    def __init__(self, layer: _Optional[str] = ..., device: _Optional[str] = ...) -> None: ...

class PartitionRange(_message.Message):
    __slots__ = ("device", "first_layer", "layer_count")
    DEVICE_FIELD_NUMBER: _ClassVar[int]
    FIRST_LAYER_FIELD_NUMBER: _ClassVar[int]
    LAYER_COUNT_FIELD_NUMBER: _ClassVar[int]
    device: str
    first_layer: int
    layer_count: int
    def __init__(self, device: _Optional[str] = ..., first_layer: _Optional[int] = ..., layer_count: _Optional[int] = ...) -> None: ...

class PartitionPlanStage(_message.Message):
    __slots__ = ("devices", "first_layer", "layer_count")
    DEVICES_FIELD_NUMBER: _ClassVar[int]
    FIRST_LAYER_FIELD_NUMBER: _ClassVar[int]
    LAYER_COUNT_FIELD_NUMBER: _ClassVar[int]
    devices: _containers.RepeatedScalarFieldContainer[str]
    first_layer: int
    layer_count: int
    def __init__(self, devices: _Optional[_Iterable[str]] = ..., first_layer: _Optional[int] = ..., layer_count: _Optional[int] = ...) -> None: ...

class PartitionPipeline(_message.Message):
    __slots__ = ("stages",)
    STAGES_FIELD_NUMBER: _ClassVar[int]
    stages: _containers.RepeatedCompositeFieldContainer[PartitionPlanStage]
    def __init__(self, stages: _Optional[_Iterable[_Union[PartitionPlanStage, _Mapping]]] = ...) -> None: ...

class PartitionEdgeSplitChoice(_message.Message):
    __slots__ = ("device_layers", "bits")
    DEVICE_LAYERS_FIELD_NUMBER: _ClassVar[int]
    BITS_FIELD_NUMBER: _ClassVar[int]
    device_layers: int
    bits: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, device_layers: _Optional[int] = ..., bits: _Optional[_Iterable[int]] = ...) -> None: ...

class PartitionSolution(_message.Message):
    __slots__ = ("assignments", "ranges", "pipelines", "edge_split")
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    RANGES_FIELD_NUMBER: _ClassVar[int]
    PIPELINES_FIELD_NUMBER: _ClassVar[int]
    EDGE_SPLIT_FIELD_NUMBER: _ClassVar[int]
    assignments: _containers.RepeatedCompositeFieldContainer[PartitionAssignment]
    ranges: _containers.RepeatedCompositeFieldContainer[PartitionRange]
    pipelines: _containers.RepeatedCompositeFieldContainer[PartitionPipeline]
    edge_split: PartitionEdgeSplitChoice
    def __init__(self, assignments: _Optional[_Iterable[_Union[PartitionAssignment, _Mapping]]] = ..., ranges: _Optional[_Iterable[_Union[PartitionRange, _Mapping]]] = ..., pipelines: _Optional[_Iterable[_Union[PartitionPipeline, _Mapping]]] = ..., edge_split: _Optional[_Union[PartitionEdgeSplitChoice, _Mapping]] = ...) -> None: ...
