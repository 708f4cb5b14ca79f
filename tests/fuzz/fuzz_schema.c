/* tests/fuzz/fuzz_schema.c - the schema validator on arbitrary JSON: the value is validated
 * against every built-in tool's input and output schema, then used as a schema itself
 * (schema_check, and validation of the value against itself). Contracts checked, aborting
 * when one breaks: the return code agrees with the count; every kept message is non-empty, one
 * line, shorter than SCHEMA_MSG_MAX and starts with the root name; a schema that passes
 * schema_check validates without trouble. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "jsonrpc.h"
#include "schema.h"

static void require(bool ok)
{
    if (!ok)
        abort();
}

static void validate_checked(const cJSON *schema, const cJSON *value, const char *root)
{
    struct schema_report rep;
    size_t kept;
    int rc = schema_validate(schema, value, root, &rep);

    require((rc == 0) == (rep.count == 0));
    kept = rep.count < SCHEMA_MAX_ERRORS ? rep.count : SCHEMA_MAX_ERRORS;
    for (size_t i = 0; i < kept; i++) {
        size_t len = strnlen(rep.msgs[i], SCHEMA_MSG_MAX);

        require(len > 0 && len < SCHEMA_MSG_MAX);
        require(strchr(rep.msgs[i], '\n') == NULL && strchr(rep.msgs[i], '\r') == NULL);
        require(strncmp(rep.msgs[i], root, strlen(root)) == 0 ||
                strncmp(rep.msgs[i], "...", 3) == 0);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct catalog *cat = catalog_builtin();
    struct errinfo err;
    cJSON *value = jsonrpc_parse((const char *)data, size, NULL);

    if (!value)
        return 0;
    for (size_t i = 0; i < catalog_count(cat); i++) {
        const struct catalog_tool *t = catalog_at(cat, i);

        validate_checked(catalog_tool_input_schema(t), value, "arguments");
        if (catalog_tool_output_schema(t))
            validate_checked(catalog_tool_output_schema(t), value, "result");
    }
    errinfo_clear(&err);
    if (schema_check(value, &err) != 0) {
        require(errinfo_is_set(&err));
        require(strchr(err.msg, '\n') == NULL);
    }
    /* Unchecked schemas too: schema_validate must never crash on a malformed schema. */
    validate_checked(value, value, "value");
    cJSON_Delete(value);
    return 0;
}
