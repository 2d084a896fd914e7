// The parameter blocks of kernels/shared/params.h as GLSL push-constant members: a kernel declares
// `layout(push_constant) uniform Push { WICK_PARAMS_ROPE(WICK_FIELD, WICK_ARRAY) } pc;` and
// the host fills the same fields in the same order (src/gpu/).
#ifndef WICK_PARAMS_GLSL
#define WICK_PARAMS_GLSL
#include "shared/params.h"

#define wick_u32 uint
#ifdef PARAM_T
#define wick_param_t PARAM_T
#endif
#define WICK_FIELD(t, n) t n;
#define WICK_ARRAY(t, n, c) t n[c];
#endif
