# The PJRT element types of cyxla/element_type.h, for Cython modules (cimport cyxla._pjrt).
# Cython takes the values from that header; these are the names it lists that cyxla
# carries (tests/test_dtypes.py checks them against the header).

cdef extern from "cyxla/element_type.h" nogil:
    ctypedef enum PJRT_Buffer_Type:
        PJRT_Buffer_Type_INVALID
        PJRT_Buffer_Type_PRED
        PJRT_Buffer_Type_S8
        PJRT_Buffer_Type_S16
        PJRT_Buffer_Type_S32
        PJRT_Buffer_Type_S64
        PJRT_Buffer_Type_U8
        PJRT_Buffer_Type_U16
        PJRT_Buffer_Type_U32
        PJRT_Buffer_Type_U64
        PJRT_Buffer_Type_F16
        PJRT_Buffer_Type_F32
        PJRT_Buffer_Type_F64
        PJRT_Buffer_Type_BF16
        PJRT_Buffer_Type_C64
        PJRT_Buffer_Type_C128
