#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
/* Writes x, sinf(x), cosf(x) as float32 bit patterns for 20000 arguments in [-8, 8] and a few edges. */
int main(){ uint32_t seed=12345; for(int i=0;i<20000;i++){ seed=seed*1664525u+1013904223u; float x = ((seed>>8)/(float)(1<<24))*16.0f-8.0f; if (i < 8) { float e[8] = {0.0f, 1e-5f, -1e-5f, 0.7853981f, 0.7853982f, 3.1415927f, -1.5707964f, 100.0f}; x = e[i]; } float s=sinf(x), c=cosf(x); uint32_t a,b,d; memcpy(&a,&x,4); memcpy(&b,&s,4); memcpy(&d,&c,4); printf("%08x %08x %08x\n", a, b, d);} }
