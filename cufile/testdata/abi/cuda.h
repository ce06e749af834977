/* A stand-in for CUDA's cuda.h, enough for cufile.h to compile in the ABI
 * check (abi_check.c): cufile.h needs only CUresult from it. Like the real
 * one, CUresult is an enum whose success value is 0. */
#ifndef GDSLOAD_STANDIN_CUDA_H
#define GDSLOAD_STANDIN_CUDA_H
typedef enum cudaError_enum {
	CUDA_SUCCESS = 0,
	CUDA_ERROR_NO_DEVICE = 100,
	CUDA_ERROR_UNKNOWN = 999
} CUresult;
#endif
