import { operatorsView } from "./operators";
import { placeholder } from "./placeholder";
import type { ViewDef } from "./view";

export const VIEWS: ViewDef[] = [
  placeholder(
    "overview",
    "Overview",
    "Step time of every ProfilerStep and what it was spent on: device compute, communication (overlapped or not), memcpy, memset, runtime, data loading, host-only time and idle.",
    "The devices of the window, and suggestions with the numbers behind them.",
  ),
  operatorsView,
  placeholder(
    "kernels",
    "Kernels",
    "Device kernels by name and by launching operator: calls, total, mean, min and max time, Tensor Core use on GPUs, AI Core / AI Vector / AI CPU time on Ascend NPUs.",
  ),
  placeholder(
    "memory",
    "Memory",
    "Allocated and reserved memory over time per device with the exact peak, allocation events, and which operators allocate most.",
  ),
  placeholder(
    "communication",
    "Communication",
    "Collectives per kind and group: calls, time, bytes, bandwidth, wait versus transfer time, and how much is hidden behind compute.",
  ),
];

export const DEFAULT_VIEW = "operators";
