"""The fields of every served version of the objects draspeed reads, for unknown-field checks.

The API server decodes objects strictly (``kubectl --validate=strict``, the default):
a field its Go types do not have is an error, ``strict decoding error: unknown field
"spec.devices[0].foo"``. These tables list the JSON fields of each struct, per API
version, as the kubernetes/api types (``resource/<version>/types.go``, ``core/v1``) and
apimachinery's ``meta/v1`` define them: for each version the union of the releases
v0.26.0 to v0.36.0 and the newest commit (kubernetes/api 10b39a3, 2026-07-24;
kubernetes/apimachinery eed236c, 2026-07-23), so a dump from any release that served
the version decodes. A field is known even where draspeed ignores it, exactly as the
allocator at the pinned upstream commit ignores it (``skipNodeOperations``, ...).

A struct maps each field to what its value holds: ``None`` a value without fields of
its own (scalars, string lists and maps, quantities, free-form JSON such as opaque
parameters), ``"S"`` struct S, ``"[S]"`` a list of S, ``"{S}"`` a map of S. A Node or
a Pod is known at its top level and in its metadata only: draspeed reads a little of
their spec (a Pod's claims, see :mod:`draspeed.api.pods`) and never needs the rest,
whose schema is core/v1's, much larger than this module.

The decoders check the structs they read with :meth:`DecodeContext.known
<draspeed.api.context.DecodeContext.known>`; :func:`unknown_fields` walks the parts
they keep without reading (status device conditions, owner references, ...).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

Schema = dict[str, dict[str, str | None]]

SHARED: Schema = {
    "Condition": {
        "lastTransitionTime": None,
        "message": None,
        "observedGeneration": None,
        "reason": None,
        "status": None,
        "type": None,
    },
    "ManagedFieldsEntry": {
        "apiVersion": None,
        "fieldsType": None,
        "fieldsV1": None,
        "manager": None,
        "operation": None,
        "subresource": None,
        "time": None,
    },
    "Node": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": None,
        "status": None,
    },
    "Pod": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": None,
        "status": None,
    },
    "NodeSelector": {"nodeSelectorTerms": "[NodeSelectorTerm]"},
    "NodeSelectorRequirement": {"key": None, "operator": None, "values": None},
    "NodeSelectorTerm": {
        "matchExpressions": "[NodeSelectorRequirement]",
        "matchFields": "[NodeSelectorRequirement]",
    },
    "ObjectMeta": {
        "annotations": None,
        "creationTimestamp": None,
        "deletionGracePeriodSeconds": None,
        "deletionTimestamp": None,
        "finalizers": None,
        "generateName": None,
        "generation": None,
        "labels": None,
        "managedFields": "[ManagedFieldsEntry]",
        "name": None,
        "namespace": None,
        "ownerReferences": "[OwnerReference]",
        "resourceVersion": None,
        "selfLink": None,
        "uid": None,
    },
    "OwnerReference": {
        "apiVersion": None,
        "blockOwnerDeletion": None,
        "controller": None,
        "kind": None,
        "name": None,
        "uid": None,
    },
}

_V1: Schema = {
    "AllocatedDeviceStatus": {
        "conditions": "[Condition]",
        "data": None,
        "device": None,
        "driver": None,
        "networkData": "NetworkDeviceData",
        "pool": None,
        "shareID": None,
    },
    "AllocationResult": {
        "allocationTimestamp": None,
        "devices": "DeviceAllocationResult",
        "nodeSelector": "NodeSelector",
    },
    "CELDeviceSelector": {"expression": None},
    "CapacityRequestPolicy": {
        "default": None,
        "validRange": "CapacityRequestPolicyRange",
        "validValues": None,
    },
    "CapacityRequestPolicyRange": {"max": None, "min": None, "step": None},
    "CapacityRequirements": {"requests": None},
    "Counter": {"value": None},
    "CounterSet": {"counters": "{Counter}", "name": None},
    "Device": {
        "allNodes": None,
        "allowMultipleAllocations": None,
        "attributes": "{DeviceAttribute}",
        "bindingConditions": None,
        "bindingFailureConditions": None,
        "bindsToNode": None,
        "capacity": "{DeviceCapacity}",
        "consumesCounters": "[DeviceCounterConsumption]",
        "name": None,
        "nodeAllocatableResourceMappings": "{NodeAllocatableResourceMapping}",
        "nodeAllocatableResources": "{NodeAllocatableResource}",
        "nodeName": None,
        "nodeSelector": "NodeSelector",
        "taints": "[DeviceTaint]",
    },
    "DeviceAllocationConfiguration": {
        "opaque": "OpaqueDeviceConfiguration",
        "requests": None,
        "source": None,
    },
    "DeviceAllocationResult": {
        "config": "[DeviceAllocationConfiguration]",
        "results": "[DeviceRequestAllocationResult]",
    },
    "DeviceAttribute": {
        "bool": None,
        "bools": None,
        "int": None,
        "ints": None,
        "string": None,
        "strings": None,
        "version": None,
        "versions": None,
    },
    "DeviceCapacity": {"requestPolicy": "CapacityRequestPolicy", "value": None},
    "DeviceClaim": {
        "config": "[DeviceClaimConfiguration]",
        "constraints": "[DeviceConstraint]",
        "requests": "[DeviceRequest]",
    },
    "DeviceClaimConfiguration": {"opaque": "OpaqueDeviceConfiguration", "requests": None},
    "DeviceClass": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "DeviceClassSpec",
    },
    "DeviceClassConfiguration": {"opaque": "OpaqueDeviceConfiguration"},
    "DeviceClassSpec": {
        "config": "[DeviceClassConfiguration]",
        "extendedResourceName": None,
        "selectors": "[DeviceSelector]",
    },
    "DeviceConstraint": {"distinctAttribute": None, "matchAttribute": None, "requests": None},
    "DeviceCounterConsumption": {"counterSet": None, "counters": "{Counter}"},
    "DeviceRequest": {
        "exactly": "ExactDeviceRequest",
        "firstAvailable": "[DeviceSubRequest]",
        "name": None,
    },
    "DeviceRequestAllocationResult": {
        "adminAccess": None,
        "bindingConditions": None,
        "bindingFailureConditions": None,
        "consumedCapacity": None,
        "device": None,
        "driver": None,
        "pool": None,
        "request": None,
        "shareID": None,
        "skipNodeOperations": None,
        "tolerations": "[DeviceToleration]",
    },
    "DeviceSelector": {"cel": "CELDeviceSelector"},
    "DeviceSubRequest": {
        "allocationMode": None,
        "capacity": "CapacityRequirements",
        "count": None,
        "deviceClassName": None,
        "name": None,
        "selectors": "[DeviceSelector]",
        "tolerations": "[DeviceToleration]",
    },
    "DeviceTaint": {"effect": None, "key": None, "timeAdded": None, "value": None},
    "DeviceTaintRule": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "DeviceTaintRuleSpec",
        "status": "DeviceTaintRuleStatus",
    },
    "DeviceTaintRuleSpec": {"deviceSelector": "DeviceTaintSelector", "taint": "DeviceTaint"},
    "DeviceTaintRuleStatus": {"conditions": "[Condition]"},
    "DeviceTaintSelector": {"device": None, "driver": None, "pool": None},
    "DeviceToleration": {
        "effect": None,
        "key": None,
        "operator": None,
        "tolerationSeconds": None,
        "value": None,
    },
    "ExactDeviceRequest": {
        "adminAccess": None,
        "allocationMode": None,
        "capacity": "CapacityRequirements",
        "count": None,
        "deviceClassName": None,
        "selectors": "[DeviceSelector]",
        "tolerations": "[DeviceToleration]",
    },
    "NetworkDeviceData": {"hardwareAddress": None, "interfaceName": None, "ips": None},
    "NodeAllocatableMapping": {
        "capacityKey": None,
        "capacityMultiplier": None,
        "deviceMultiplier": None,
    },
    "NodeAllocatableOverhead": {"perContainer": None, "perPod": None},
    "NodeAllocatableResource": {
        "mapping": "NodeAllocatableMapping",
        "overhead": "NodeAllocatableOverhead",
    },
    "NodeAllocatableResourceMapping": {"allocationMultiplier": None, "capacityKey": None},
    "OpaqueDeviceConfiguration": {"driver": None, "parameters": None},
    "ResourceClaim": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "ResourceClaimSpec",
        "status": "ResourceClaimStatus",
    },
    "ResourceClaimConsumerReference": {
        "apiGroup": None,
        "name": None,
        "resource": None,
        "uid": None,
    },
    "ResourceClaimSpec": {"devices": "DeviceClaim"},
    "ResourceClaimStatus": {
        "allocation": "AllocationResult",
        "devices": "[AllocatedDeviceStatus]",
        "reservedFor": "[ResourceClaimConsumerReference]",
    },
    "ResourceClaimTemplate": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "ResourceClaimTemplateSpec",
    },
    "ResourceClaimTemplateSpec": {"metadata": "ObjectMeta", "spec": "ResourceClaimSpec"},
    "ResourcePool": {"generation": None, "name": None, "resourceSliceCount": None},
    "ResourceSlice": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "ResourceSliceSpec",
    },
    "ResourceSliceSpec": {
        "allNodes": None,
        "devices": "[Device]",
        "driver": None,
        "nodeName": None,
        "nodeSelector": "NodeSelector",
        "partitionTypeAttribute": None,
        "perDeviceNodeSelection": None,
        "pool": "ResourcePool",
        "sharedCounters": "[CounterSet]",
        "skipNodeOperations": None,
    },
}

_V1BETA2: Schema = {
    "AllocatedDeviceStatus": {
        "conditions": "[Condition]",
        "data": None,
        "device": None,
        "driver": None,
        "networkData": "NetworkDeviceData",
        "pool": None,
        "shareID": None,
    },
    "AllocationResult": {
        "allocationTimestamp": None,
        "devices": "DeviceAllocationResult",
        "nodeSelector": "NodeSelector",
    },
    "CELDeviceSelector": {"expression": None},
    "CapacityRequestPolicy": {
        "default": None,
        "validRange": "CapacityRequestPolicyRange",
        "validValues": None,
    },
    "CapacityRequestPolicyRange": {"max": None, "min": None, "step": None},
    "CapacityRequirements": {"requests": None},
    "Counter": {"value": None},
    "CounterSet": {"counters": "{Counter}", "name": None},
    "Device": {
        "allNodes": None,
        "allowMultipleAllocations": None,
        "attributes": "{DeviceAttribute}",
        "bindingConditions": None,
        "bindingFailureConditions": None,
        "bindsToNode": None,
        "capacity": "{DeviceCapacity}",
        "consumesCounters": "[DeviceCounterConsumption]",
        "name": None,
        "nodeAllocatableResourceMappings": "{NodeAllocatableResourceMapping}",
        "nodeAllocatableResources": "{NodeAllocatableResource}",
        "nodeName": None,
        "nodeSelector": "NodeSelector",
        "taints": "[DeviceTaint]",
    },
    "DeviceAllocationConfiguration": {
        "opaque": "OpaqueDeviceConfiguration",
        "requests": None,
        "source": None,
    },
    "DeviceAllocationResult": {
        "config": "[DeviceAllocationConfiguration]",
        "results": "[DeviceRequestAllocationResult]",
    },
    "DeviceAttribute": {
        "bool": None,
        "bools": None,
        "int": None,
        "ints": None,
        "string": None,
        "strings": None,
        "version": None,
        "versions": None,
    },
    "DeviceCapacity": {"requestPolicy": "CapacityRequestPolicy", "value": None},
    "DeviceClaim": {
        "config": "[DeviceClaimConfiguration]",
        "constraints": "[DeviceConstraint]",
        "requests": "[DeviceRequest]",
    },
    "DeviceClaimConfiguration": {"opaque": "OpaqueDeviceConfiguration", "requests": None},
    "DeviceClass": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "DeviceClassSpec",
    },
    "DeviceClassConfiguration": {"opaque": "OpaqueDeviceConfiguration"},
    "DeviceClassSpec": {
        "config": "[DeviceClassConfiguration]",
        "extendedResourceName": None,
        "selectors": "[DeviceSelector]",
    },
    "DeviceConstraint": {"distinctAttribute": None, "matchAttribute": None, "requests": None},
    "DeviceCounterConsumption": {"counterSet": None, "counters": "{Counter}"},
    "DeviceRequest": {
        "exactly": "ExactDeviceRequest",
        "firstAvailable": "[DeviceSubRequest]",
        "name": None,
    },
    "DeviceRequestAllocationResult": {
        "adminAccess": None,
        "bindingConditions": None,
        "bindingFailureConditions": None,
        "consumedCapacity": None,
        "device": None,
        "driver": None,
        "pool": None,
        "request": None,
        "shareID": None,
        "skipNodeOperations": None,
        "tolerations": "[DeviceToleration]",
    },
    "DeviceSelector": {"cel": "CELDeviceSelector"},
    "DeviceSubRequest": {
        "allocationMode": None,
        "capacity": "CapacityRequirements",
        "count": None,
        "deviceClassName": None,
        "name": None,
        "selectors": "[DeviceSelector]",
        "tolerations": "[DeviceToleration]",
    },
    "DeviceTaint": {"effect": None, "key": None, "timeAdded": None, "value": None},
    "DeviceTaintRule": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "DeviceTaintRuleSpec",
        "status": "DeviceTaintRuleStatus",
    },
    "DeviceTaintRuleSpec": {"deviceSelector": "DeviceTaintSelector", "taint": "DeviceTaint"},
    "DeviceTaintRuleStatus": {"conditions": "[Condition]"},
    "DeviceTaintSelector": {"device": None, "driver": None, "pool": None},
    "DeviceToleration": {
        "effect": None,
        "key": None,
        "operator": None,
        "tolerationSeconds": None,
        "value": None,
    },
    "ExactDeviceRequest": {
        "adminAccess": None,
        "allocationMode": None,
        "capacity": "CapacityRequirements",
        "count": None,
        "deviceClassName": None,
        "selectors": "[DeviceSelector]",
        "tolerations": "[DeviceToleration]",
    },
    "NetworkDeviceData": {"hardwareAddress": None, "interfaceName": None, "ips": None},
    "NodeAllocatableMapping": {
        "capacityKey": None,
        "capacityMultiplier": None,
        "deviceMultiplier": None,
    },
    "NodeAllocatableOverhead": {"perContainer": None, "perPod": None},
    "NodeAllocatableResource": {
        "mapping": "NodeAllocatableMapping",
        "overhead": "NodeAllocatableOverhead",
    },
    "NodeAllocatableResourceMapping": {"allocationMultiplier": None, "capacityKey": None},
    "OpaqueDeviceConfiguration": {"driver": None, "parameters": None},
    "ResourceClaim": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "ResourceClaimSpec",
        "status": "ResourceClaimStatus",
    },
    "ResourceClaimConsumerReference": {
        "apiGroup": None,
        "name": None,
        "resource": None,
        "uid": None,
    },
    "ResourceClaimSpec": {"devices": "DeviceClaim"},
    "ResourceClaimStatus": {
        "allocation": "AllocationResult",
        "devices": "[AllocatedDeviceStatus]",
        "reservedFor": "[ResourceClaimConsumerReference]",
    },
    "ResourceClaimTemplate": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "ResourceClaimTemplateSpec",
    },
    "ResourceClaimTemplateSpec": {"metadata": "ObjectMeta", "spec": "ResourceClaimSpec"},
    "ResourcePool": {"generation": None, "name": None, "resourceSliceCount": None},
    "ResourceSlice": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "ResourceSliceSpec",
    },
    "ResourceSliceSpec": {
        "allNodes": None,
        "devices": "[Device]",
        "driver": None,
        "nodeName": None,
        "nodeSelector": "NodeSelector",
        "partitionTypeAttribute": None,
        "perDeviceNodeSelection": None,
        "pool": "ResourcePool",
        "sharedCounters": "[CounterSet]",
        "skipNodeOperations": None,
    },
}

_V1BETA1: Schema = {
    "AllocatedDeviceStatus": {
        "conditions": "[Condition]",
        "data": None,
        "device": None,
        "driver": None,
        "networkData": "NetworkDeviceData",
        "pool": None,
        "shareID": None,
    },
    "AllocationResult": {
        "allocationTimestamp": None,
        "devices": "DeviceAllocationResult",
        "nodeSelector": "NodeSelector",
    },
    "BasicDevice": {
        "allNodes": None,
        "allowMultipleAllocations": None,
        "attributes": "{DeviceAttribute}",
        "bindingConditions": None,
        "bindingFailureConditions": None,
        "bindsToNode": None,
        "capacity": "{DeviceCapacity}",
        "consumesCounters": "[DeviceCounterConsumption]",
        "nodeAllocatableResourceMappings": "{NodeAllocatableResourceMapping}",
        "nodeAllocatableResources": "{NodeAllocatableResource}",
        "nodeName": None,
        "nodeSelector": "NodeSelector",
        "taints": "[DeviceTaint]",
    },
    "CELDeviceSelector": {"expression": None},
    "CapacityRequestPolicy": {
        "default": None,
        "validRange": "CapacityRequestPolicyRange",
        "validValues": None,
    },
    "CapacityRequestPolicyRange": {"max": None, "min": None, "step": None},
    "CapacityRequirements": {"requests": None},
    "Counter": {"value": None},
    "CounterSet": {"counters": "{Counter}", "name": None},
    "Device": {"basic": "BasicDevice", "name": None},
    "DeviceAllocationConfiguration": {
        "opaque": "OpaqueDeviceConfiguration",
        "requests": None,
        "source": None,
    },
    "DeviceAllocationResult": {
        "config": "[DeviceAllocationConfiguration]",
        "results": "[DeviceRequestAllocationResult]",
    },
    "DeviceAttribute": {
        "bool": None,
        "bools": None,
        "int": None,
        "ints": None,
        "string": None,
        "strings": None,
        "version": None,
        "versions": None,
    },
    "DeviceCapacity": {"requestPolicy": "CapacityRequestPolicy", "value": None},
    "DeviceClaim": {
        "config": "[DeviceClaimConfiguration]",
        "constraints": "[DeviceConstraint]",
        "requests": "[DeviceRequest]",
    },
    "DeviceClaimConfiguration": {"opaque": "OpaqueDeviceConfiguration", "requests": None},
    "DeviceClass": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "DeviceClassSpec",
    },
    "DeviceClassConfiguration": {"opaque": "OpaqueDeviceConfiguration"},
    "DeviceClassSpec": {
        "config": "[DeviceClassConfiguration]",
        "extendedResourceName": None,
        "selectors": "[DeviceSelector]",
    },
    "DeviceConstraint": {"distinctAttribute": None, "matchAttribute": None, "requests": None},
    "DeviceCounterConsumption": {"counterSet": None, "counters": "{Counter}"},
    "DeviceRequest": {
        "adminAccess": None,
        "allocationMode": None,
        "capacity": "CapacityRequirements",
        "count": None,
        "deviceClassName": None,
        "firstAvailable": "[DeviceSubRequest]",
        "name": None,
        "selectors": "[DeviceSelector]",
        "tolerations": "[DeviceToleration]",
    },
    "DeviceRequestAllocationResult": {
        "adminAccess": None,
        "bindingConditions": None,
        "bindingFailureConditions": None,
        "consumedCapacity": None,
        "device": None,
        "driver": None,
        "pool": None,
        "request": None,
        "shareID": None,
        "skipNodeOperations": None,
        "tolerations": "[DeviceToleration]",
    },
    "DeviceSelector": {"cel": "CELDeviceSelector"},
    "DeviceSubRequest": {
        "allocationMode": None,
        "capacity": "CapacityRequirements",
        "count": None,
        "deviceClassName": None,
        "name": None,
        "selectors": "[DeviceSelector]",
        "tolerations": "[DeviceToleration]",
    },
    "DeviceTaint": {"effect": None, "key": None, "timeAdded": None, "value": None},
    "DeviceToleration": {
        "effect": None,
        "key": None,
        "operator": None,
        "tolerationSeconds": None,
        "value": None,
    },
    "NetworkDeviceData": {"hardwareAddress": None, "interfaceName": None, "ips": None},
    "NodeAllocatableMapping": {
        "capacityKey": None,
        "capacityMultiplier": None,
        "deviceMultiplier": None,
    },
    "NodeAllocatableOverhead": {"perContainer": None, "perPod": None},
    "NodeAllocatableResource": {
        "mapping": "NodeAllocatableMapping",
        "overhead": "NodeAllocatableOverhead",
    },
    "NodeAllocatableResourceMapping": {"allocationMultiplier": None, "capacityKey": None},
    "OpaqueDeviceConfiguration": {"driver": None, "parameters": None},
    "ResourceClaim": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "ResourceClaimSpec",
        "status": "ResourceClaimStatus",
    },
    "ResourceClaimConsumerReference": {
        "apiGroup": None,
        "name": None,
        "resource": None,
        "uid": None,
    },
    "ResourceClaimSpec": {"devices": "DeviceClaim"},
    "ResourceClaimStatus": {
        "allocation": "AllocationResult",
        "devices": "[AllocatedDeviceStatus]",
        "reservedFor": "[ResourceClaimConsumerReference]",
    },
    "ResourceClaimTemplate": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "ResourceClaimTemplateSpec",
    },
    "ResourceClaimTemplateSpec": {"metadata": "ObjectMeta", "spec": "ResourceClaimSpec"},
    "ResourcePool": {"generation": None, "name": None, "resourceSliceCount": None},
    "ResourceSlice": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "ResourceSliceSpec",
    },
    "ResourceSliceSpec": {
        "allNodes": None,
        "devices": "[Device]",
        "driver": None,
        "nodeName": None,
        "nodeSelector": "NodeSelector",
        "partitionTypeAttribute": None,
        "perDeviceNodeSelection": None,
        "pool": "ResourcePool",
        "sharedCounters": "[CounterSet]",
        "skipNodeOperations": None,
    },
}

_V1ALPHA3: Schema = {
    "AllocatedDeviceStatus": {
        "conditions": "[Condition]",
        "data": None,
        "device": None,
        "driver": None,
        "networkData": "NetworkDeviceData",
        "pool": None,
    },
    "AllocationResult": {
        "controller": None,
        "devices": "DeviceAllocationResult",
        "nodeSelector": "NodeSelector",
    },
    "BasicDevice": {
        "allNodes": None,
        "attributes": "{DeviceAttribute}",
        "capacity": None,
        "consumesCounters": "[DeviceCounterConsumption]",
        "nodeName": None,
        "nodeSelector": "NodeSelector",
        "taints": "[DeviceTaint]",
    },
    "CELDeviceSelector": {"expression": None},
    "Counter": {"value": None},
    "CounterSet": {"counters": "{Counter}", "name": None},
    "Device": {"basic": "BasicDevice", "name": None},
    "DeviceAllocationConfiguration": {
        "opaque": "OpaqueDeviceConfiguration",
        "requests": None,
        "source": None,
    },
    "DeviceAllocationResult": {
        "config": "[DeviceAllocationConfiguration]",
        "results": "[DeviceRequestAllocationResult]",
    },
    "DeviceAttribute": {"bool": None, "int": None, "string": None, "version": None},
    "DeviceClaim": {
        "config": "[DeviceClaimConfiguration]",
        "constraints": "[DeviceConstraint]",
        "requests": "[DeviceRequest]",
    },
    "DeviceClaimConfiguration": {"opaque": "OpaqueDeviceConfiguration", "requests": None},
    "DeviceClass": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "DeviceClassSpec",
    },
    "DeviceClassConfiguration": {"opaque": "OpaqueDeviceConfiguration"},
    "DeviceClassSpec": {
        "config": "[DeviceClassConfiguration]",
        "selectors": "[DeviceSelector]",
        "suitableNodes": "NodeSelector",
    },
    "DeviceConstraint": {"matchAttribute": None, "requests": None},
    "DeviceCounterConsumption": {"counterSet": None, "counters": "{Counter}"},
    "DeviceRequest": {
        "adminAccess": None,
        "allocationMode": None,
        "count": None,
        "deviceClassName": None,
        "firstAvailable": "[DeviceSubRequest]",
        "name": None,
        "selectors": "[DeviceSelector]",
        "tolerations": "[DeviceToleration]",
    },
    "DeviceRequestAllocationResult": {
        "adminAccess": None,
        "device": None,
        "driver": None,
        "pool": None,
        "request": None,
        "tolerations": "[DeviceToleration]",
    },
    "DeviceSelector": {"cel": "CELDeviceSelector"},
    "DeviceSubRequest": {
        "allocationMode": None,
        "count": None,
        "deviceClassName": None,
        "name": None,
        "selectors": "[DeviceSelector]",
        "tolerations": "[DeviceToleration]",
    },
    "DeviceTaint": {"effect": None, "key": None, "timeAdded": None, "value": None},
    "DeviceTaintRule": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "DeviceTaintRuleSpec",
        "status": "DeviceTaintRuleStatus",
    },
    "DeviceTaintRuleSpec": {"deviceSelector": "DeviceTaintSelector", "taint": "DeviceTaint"},
    "DeviceTaintRuleStatus": {"conditions": "[Condition]"},
    "DeviceTaintSelector": {
        "device": None,
        "deviceClassName": None,
        "driver": None,
        "pool": None,
        "selectors": "[DeviceSelector]",
    },
    "DeviceToleration": {
        "effect": None,
        "key": None,
        "operator": None,
        "tolerationSeconds": None,
        "value": None,
    },
    "NetworkDeviceData": {"hardwareAddress": None, "interfaceName": None, "ips": None},
    "OpaqueDeviceConfiguration": {"driver": None, "parameters": None},
    "ResourceClaim": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "ResourceClaimSpec",
        "status": "ResourceClaimStatus",
    },
    "ResourceClaimConsumerReference": {
        "apiGroup": None,
        "name": None,
        "resource": None,
        "uid": None,
    },
    "ResourceClaimSpec": {"controller": None, "devices": "DeviceClaim"},
    "ResourceClaimStatus": {
        "allocation": "AllocationResult",
        "deallocationRequested": None,
        "devices": "[AllocatedDeviceStatus]",
        "reservedFor": "[ResourceClaimConsumerReference]",
    },
    "ResourceClaimTemplate": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "ResourceClaimTemplateSpec",
    },
    "ResourceClaimTemplateSpec": {"metadata": "ObjectMeta", "spec": "ResourceClaimSpec"},
    "ResourcePool": {"generation": None, "name": None, "resourceSliceCount": None},
    "ResourceSlice": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "ResourceSliceSpec",
    },
    "ResourceSliceSpec": {
        "allNodes": None,
        "devices": "[Device]",
        "driver": None,
        "nodeName": None,
        "nodeSelector": "NodeSelector",
        "perDeviceNodeSelection": None,
        "pool": "ResourcePool",
        "sharedCounters": "[CounterSet]",
    },
}

_V1ALPHA2: Schema = {
    "AllocationResult": {
        "availableOnNodes": "NodeSelector",
        "resourceHandles": "[ResourceHandle]",
        "shareable": None,
    },
    "DriverAllocationResult": {"namedResources": None, "vendorRequestParameters": None},
    "ResourceClaim": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "ResourceClaimSpec",
        "status": "ResourceClaimStatus",
    },
    "ResourceClaimConsumerReference": {
        "apiGroup": None,
        "name": None,
        "resource": None,
        "uid": None,
    },
    "ResourceClaimParametersReference": {"apiGroup": None, "kind": None, "name": None},
    "ResourceClaimSpec": {
        "allocationMode": None,
        "parametersRef": "ResourceClaimParametersReference",
        "resourceClassName": None,
    },
    "ResourceClaimStatus": {
        "allocation": "AllocationResult",
        "deallocationRequested": None,
        "driverName": None,
        "reservedFor": "[ResourceClaimConsumerReference]",
    },
    "ResourceClaimTemplate": {
        "apiVersion": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "spec": "ResourceClaimTemplateSpec",
    },
    "ResourceClaimTemplateSpec": {"metadata": "ObjectMeta", "spec": "ResourceClaimSpec"},
    "ResourceClass": {
        "apiVersion": None,
        "driverName": None,
        "kind": None,
        "metadata": "ObjectMeta",
        "parametersRef": "ResourceClassParametersReference",
        "structuredParameters": None,
        "suitableNodes": "NodeSelector",
    },
    "ResourceClassParametersReference": {
        "apiGroup": None,
        "kind": None,
        "name": None,
        "namespace": None,
    },
    "ResourceHandle": {
        "data": None,
        "driverName": None,
        "structuredData": "StructuredResourceHandle",
    },
    "StructuredResourceHandle": {
        "nodeName": None,
        "results": "[DriverAllocationResult]",
        "vendorClaimParameters": None,
        "vendorClassParameters": None,
    },
}


# version -> struct -> field -> what the field holds (see the module docstring)
SCHEMAS: dict[str, Schema] = {
    version: {**SHARED, **own}
    for version, own in (
        ("v1", _V1),
        ("v1beta2", _V1BETA2),
        ("v1beta1", _V1BETA1),
        ("v1alpha3", _V1ALPHA3),
        ("v1alpha2", _V1ALPHA2),
    )
}
SCHEMAS["core/v1"] = SHARED

# version -> struct -> its field names (what the decoders compare key sets with)
KNOWN: dict[str, dict[str, frozenset[str]]] = {
    version: {name: frozenset(fields) for name, fields in schema.items()}
    for version, schema in SCHEMAS.items()
}


_ABSENT = object()


def all_known(value: Any, schema: Schema, ref: str | None) -> bool:
    """True if ``value`` has no field ``ref`` lacks: :func:`unknown_fields` finding
    nothing, without building a path (every object of a cluster dump is checked)."""
    if ref is None:
        return True
    if ref[0] == "[":
        if isinstance(value, list):
            inner = ref[1:-1]
            for item in value:
                if not all_known(item, schema, inner):
                    return False
        return True
    if ref[0] == "{":
        if isinstance(value, Mapping):
            inner = ref[1:-1]
            for item in value.values():
                if not all_known(item, schema, inner):
                    return False
        return True
    if not isinstance(value, Mapping):
        return True
    fields = schema[ref]
    for key, item in value.items():
        sub = fields.get(key, _ABSENT)
        if sub is _ABSENT:
            return False
        if sub is not None and not all_known(item, schema, sub):  # type: ignore[arg-type]
            return False
    return True


def unknown_fields(value: Any, schema: Schema, ref: str | None, path: str) -> Iterator[str]:
    """The paths of the fields in ``value`` that ``ref`` (a struct, ``[S]`` or ``{S}``,
    see the module docstring) does not have, in order. Values of another shape are left
    to the decoders, which report the type."""
    if ref is None:
        return
    if ref[0] == "[":
        if isinstance(value, list):
            for i, item in enumerate(value):
                yield from unknown_fields(item, schema, ref[1:-1], f"{path}[{i}]")
        return
    if ref[0] == "{":
        if isinstance(value, Mapping):
            for key, item in value.items():
                yield from unknown_fields(item, schema, ref[1:-1], _join(path, str(key)))
        return
    if not isinstance(value, Mapping):
        return
    fields = schema[ref]
    for key, item in value.items():
        if key not in fields:
            yield _join(path, str(key))
        else:
            yield from unknown_fields(item, schema, fields[key], _join(path, key))


def _join(path: str, key: str) -> str:
    """A field path as the API server's strict decoding prints it: names joined by dots."""
    return f"{path}.{key}" if path else key
