/* The call chain of bt.c: main, outer (bt.c) -> middle (omit.c) ->
 * kbt_lib (lib.c) -> inner (omit.c) -> leaf (bt.c) -> getppid; with
 * "notable", main -> notable (notable.c) -> chain (bt.c) -> outer. */
int leaf(int n);
int middle(int n);
int inner(int n);
int kbt_lib(int n, int (*next)(int));
int chain(int n);
int notable(int n);
