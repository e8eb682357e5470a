from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class QuantumNode(_message.Message):
    __slots__ = ("name", "qubits", "swap_success", "x", "y")
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUBITS_FIELD_NUMBER: _ClassVar[int]
    SWAP_SUCCESS_FIELD_NUMBER: _ClassVar[int]
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    name: str
    qubits: int
    swap_success: float
    x: float
    y: float
    def __init__(self, name: _Optional[str] = ..., qubits: _Optional[int] = ..., swap_success: _Optional[float] = ..., x: _Optional[float] = ..., y: _Optional[float] = ...) -> None: ...

class QuantumLink(_message.Message):
    __slots__ = ("a", "b", "channels", "success", "length_km", "fidelity")
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    LENGTH_KM_FIELD_NUMBER: _ClassVar[int]
    FIDELITY_FIELD_NUMBER: _ClassVar[int]
    a: str
    b: str
    channels: int
    success: float
    length_km: float
    fidelity: float
    def __init__(self, a: _Optional[str] = ..., b: _Optional[str] = ..., channels: _Optional[int] = ..., success: _Optional[float] = ..., length_km: _Optional[float] = ..., fidelity: _Optional[float] = ...) -> None: ...

class EntanglementRequest(_message.Message):
    __slots__ = ("name", "source", "destination", "weight", "min_fidelity", "demand")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    WEIGHT_FIELD_NUMBER: _ClassVar[int]
    MIN_FIDELITY_FIELD_NUMBER: _ClassVar[int]
    DEMAND_FIELD_NUMBER: _ClassVar[int]
    name: str
    source: str
    destination: str
    weight: float
    min_fidelity: float
    demand: float
    def __init__(self, name: _Optional[str] = ..., source: _Optional[str] = ..., destination: _Optional[str] = ..., weight: _Optional[float] = ..., min_fidelity: _Optional[float] = ..., demand: _Optional[float] = ...) -> None: ...

class EntanglementInstance(_message.Message):
    __slots__ = ("nodes", "links", "requests", "attenuation_per_km", "objective", "candidate_paths")
    NODES_FIELD_NUMBER: _ClassVar[int]
    LINKS_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    ATTENUATION_PER_KM_FIELD_NUMBER: _ClassVar[int]
    OBJECTIVE_FIELD_NUMBER: _ClassVar[int]
    CANDIDATE_PATHS_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[QuantumNode]
    links: _containers.RepeatedCompositeFieldContainer[QuantumLink]
    requests: _containers.RepeatedCompositeFieldContainer[EntanglementRequest]
    attenuation_per_km: float
    objective: str
    candidate_paths: int
    def __init__(self, nodes: _Optional[_Iterable[_Union[QuantumNode, _Mapping]]] = ..., links: _Optional[_Iterable[_Union[QuantumLink, _Mapping]]] = ..., requests: _Optional[_Iterable[_Union[EntanglementRequest, _Mapping]]] = ..., attenuation_per_km: _Optional[float] = ..., objective: _Optional[str] = ..., candidate_paths: _Optional[int] = ...) -> None: ...

class RoutedPath(_message.Message):
    __slots__ = ("request", "nodes", "width", "expected_throughput", "fidelity")
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_THROUGHPUT_FIELD_NUMBER: _ClassVar[int]
    FIDELITY_FIELD_NUMBER: _ClassVar[int]
    request: str
    nodes: _containers.RepeatedScalarFieldContainer[str]
    width: int
    expected_throughput: float
    fidelity: float
    def __init__(self, request: _Optional[str] = ..., nodes: _Optional[_Iterable[str]] = ..., width: _Optional[int] = ..., expected_throughput: _Optional[float] = ..., fidelity: _Optional[float] = ...) -> None: ...

class UnplacedRequest(_message.Message):
    __slots__ = ("name", "kind", "message", "best_fidelity", "min_fidelity")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    BEST_FIDELITY_FIELD_NUMBER: _ClassVar[int]
    MIN_FIDELITY_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    message: str
    best_fidelity: float
    min_fidelity: float
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., message: _Optional[str] = ..., best_fidelity: _Optional[float] = ..., min_fidelity: _Optional[float] = ...) -> None: ...

class EntanglementSolution(_message.Message):
    __slots__ = ("paths", "unplaced")
    PATHS_FIELD_NUMBER: _ClassVar[int]
    UNPLACED_FIELD_NUMBER: _ClassVar[int]
    paths: _containers.RepeatedCompositeFieldContainer[RoutedPath]
    unplaced: _containers.RepeatedCompositeFieldContainer[UnplacedRequest]
    def __init__(self, paths: _Optional[_Iterable[_Union[RoutedPath, _Mapping]]] = ..., unplaced: _Optional[_Iterable[_Union[UnplacedRequest, _Mapping]]] = ...) -> None: ...
