// Umbrella header: everything a user of wick needs.
#pragma once

#include "wick/attention.h"
#include "wick/config.h"
#include "wick/custom_kernel.h"
#include "wick/device.h"
#include "wick/dtype.h"
#include "wick/error.h"
#include "wick/safetensors.h"
#include "wick/shape.h"
#include "wick/tensor.h"
