/* The launchers built into tl-driver (launcher.h): --launcher NAME finds its operations here. A
 * launcher is one more file and one more line in this table (docs/cluster.md "Launchers"). */
#include <string.h>

#include "launcher.h"

static const launcher_ops *const builtin[] = {
    &launcher_local_ops,
    &launcher_slurm_ops,
};

const launcher_ops *launcher_find(const char *name) {
  for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
    if (!strcmp(builtin[i]->name, name))
      return builtin[i];
  return NULL;
}
