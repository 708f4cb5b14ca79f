/* common/catalog_data.h - the compiled-in catalog documents (generated catalog_data.c, from
 * the JSON files in common/tools/ by common/embed.cmake). Private to catalog.c and its unit test.
 */
#ifndef COMMON_CATALOG_DATA_H
#define COMMON_CATALOG_DATA_H

#include <stddef.h>

extern const char *const catalog_builtin_docs[]; /* each a NUL-terminated JSON document */
extern const size_t catalog_builtin_ndocs;

#endif /* COMMON_CATALOG_DATA_H */
