// Calls 44 libc functions through the PLT, each from its own PLT entry (built -O0 -fno-builtin so
// none is inlined): the PLT symbol test puts a uprobe on every entry.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <time.h>
#include <unistd.h>
static int cmp(const void*a,const void*b){return *(const int*)a-*(const int*)b;}
int main(int argc,char**argv){ char buf[64]="hello"; char b2[64]; int arr[3]={3,1,2}; volatile long s=0; char*p;
 for(int i=0;i<2;i++){ s+=abs(-3); s+=labs(-3L); s+=atoi("12"); s+=strlen(buf); s+=strcmp(buf,"x"); strcpy(b2,buf); strcat(b2,"!"); s+=(long)strchr(buf,'l'); s+=(long)strrchr(buf,'l'); s+=(long)strstr(buf,"ll"); memset(b2,0,8); memcpy(b2,buf,4); memmove(b2,b2+1,3); s+=memcmp(b2,buf,2); s+=toupper('a'); s+=tolower('A'); s+=isalpha('a'); s+=isdigit('1'); s+=rand(); srand(1); s+=time(0); s+=getpid(); s+=getppid(); s+=getuid(); s+=geteuid(); s+=getgid(); puts("x"); fputs("y\n",stdout); fflush(stdout); p=malloc(8); free(p); p=calloc(1,8);free(p); p=realloc(0,8);free(p); s+=strtol("7",0,10); s+=strtoul("7",0,10); s+=(long)strtod("7",0); s+=(long)atof("7"); s+=atol("7"); snprintf(b2,8,"%d",1); s+=(long)getenv("HOME"); p=strdup(buf);free(p); p=strndup(buf,2);free(p); s+=strncmp(buf,"he",2); strncpy(b2,buf,3); qsort(arr,3,sizeof(int),cmp); }
 return (int)(s&1);}
