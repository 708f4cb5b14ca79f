/* common/json_compact.c - checks a JSON text and copies it without whitespace (see
 * json_compact.h).
 *
 * One pass over the text, driven by a small state machine (a value is expected, a member name
 * is expected, a value has ended) and an explicit stack of the open containers, so nesting
 * costs no C stack: the engine registers tools from threads with small stacks. The copy is made
 * of the runs of text between whitespace, so a text that is compact already is one copy. */
#include "json_compact.h"

#include <stdbool.h>
#include <stdint.h>

#define NUMBER_MAX 63 /* cJSON reads at most this many characters of a number */

enum scan_state {
    WANT_VALUE, /* a value comes next */
    WANT_KEY,   /* a member name comes next */
    AFTER_VALUE /* a value has ended: ',', a closing bracket or the end comes next */
};

static int bad(struct errinfo *err, size_t at, const char *what)
{
    errinfo_set(err, ERR_INVALID, "not valid JSON at byte %zu: %s", at, what);
    return -1;
}

static size_t skip_ws(const char *s, size_t len, size_t i)
{
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The four hex digits at s[i..i+4) into *out; false when they are not there. */
static bool hex4(const char *s, size_t len, size_t i, unsigned *out)
{
    unsigned v = 0;

    if (len < 4 || i > len - 4)
        return false;
    for (size_t k = i; k < i + 4; k++) {
        char c = s[k];

        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return false;
    }
    *out = v;
    return true;
}

/* The end (one past the closing quote) of the string whose opening quote is s[i], or 0 with
 * *why and *at saying what is wrong where. */
static size_t scan_string(const char *s, size_t len, size_t i, const char **why, size_t *at)
{
    size_t start = i;
    unsigned u, low;

    for (i++; i < len;) {
        unsigned char c = (unsigned char)s[i];

        if (c == '"')
            return i + 1;
        if (c < 0x20) {
            *why = "a control character inside a string (write it as an escape, such as \\n)";
            *at = i;
            return 0;
        }
        if (c != '\\') {
            i++;
            continue;
        }
        if (i + 1 >= len)
            break;
        switch (s[i + 1]) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            i += 2;
            continue;
        case 'u':
            break;
        default:
            *why = "an unknown escape (known: \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)";
            *at = i;
            return 0;
        }
        if (!hex4(s, len, i + 2, &u)) {
            *why = "\\u must be followed by four hex digits";
            *at = i;
            return 0;
        }
        if (u >= 0xDC00 && u <= 0xDFFF) {
            *why = "a UTF-16 low surrogate (\\uDC00-\\uDFFF) without a high one before it";
            *at = i;
            return 0;
        }
        if (u >= 0xD800 && u <= 0xDBFF &&
            !(i + 7 < len && s[i + 6] == '\\' && s[i + 7] == 'u' && hex4(s, len, i + 8, &low) &&
              low >= 0xDC00 && low <= 0xDFFF)) {
            *why = "a UTF-16 high surrogate (\\uD800-\\uDBFF) not followed by a low one";
            *at = i;
            return 0;
        }
        i += u >= 0xD800 && u <= 0xDBFF ? 12 : 6;
    }
    *why = "a string that is not closed";
    *at = start;
    return 0;
}

/* The end of the number that starts at s[i], or 0 with *why. */
static size_t scan_number(const char *s, size_t len, size_t i, const char **why)
{
    size_t start = i;

    if (s[i] == '-')
        i++;
    if (i >= len || !is_digit(s[i])) {
        *why = "a '-' not followed by a digit";
        return 0;
    }
    if (s[i] == '0')
        i++;
    else
        while (i < len && is_digit(s[i]))
            i++;
    if (i < len && s[i] == '.') {
        if (++i >= len || !is_digit(s[i])) {
            *why = "a decimal point not followed by a digit";
            return 0;
        }
        while (i < len && is_digit(s[i]))
            i++;
    }
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        if (i >= len || !is_digit(s[i])) {
            *why = "an exponent without digits";
            return 0;
        }
        while (i < len && is_digit(s[i]))
            i++;
    }
    if (i - start > NUMBER_MAX) {
        *why = "a number longer than 63 characters";
        return 0;
    }
    return i;
}

/* The end of the literal word (true, false, null) at s[i], or 0. */
static size_t scan_word(const char *s, size_t len, size_t i, const char *word, size_t n)
{
    if (len - i < n)
        return 0;
    for (size_t k = 0; k < n; k++)
        if (s[i + k] != word[k])
            return 0;
    return i + n;
}

/* One value that is not a container, at s[i]: its end, or 0 with *why. */
static size_t scan_scalar(const char *s, size_t len, size_t i, const char **why, size_t *at)
{
    size_t end = 0;

    *at = i;
    switch (s[i]) {
    case '"':
        return scan_string(s, len, i, why, at);
    case 't':
        end = scan_word(s, len, i, "true", 4);
        break;
    case 'f':
        end = scan_word(s, len, i, "false", 5);
        break;
    case 'n':
        end = scan_word(s, len, i, "null", 4);
        break;
    default:
        if (s[i] == '-' || is_digit(s[i]))
            return scan_number(s, len, i, why);
        *why = "expected a value (an object, array, string, number, true, false or null)";
        return 0;
    }
    if (!end)
        *why = "expected true, false or null";
    return end;
}

/* What json_compact has copied: text[0..from) is done, the whitespace in it left out. */
struct copier {
    const char *text;
    size_t from;
    struct jsonbuf *out;
    struct errinfo *err;
};

/* Skips the whitespace at i, first copying the run of text before it; returns its end. The
 * only bytes the copy leaves out are the ones skipped here, so a compact text is copied in one
 * piece. */
static size_t skip(struct copier *cp, size_t len, size_t i)
{
    size_t j = skip_ws(cp->text, len, i);

    if (j > i) {
        jsonbuf_put(cp->out, cp->text + cp->from, i - cp->from, cp->err);
        cp->from = j;
    }
    return j;
}

int json_compact(const char *text, size_t len, struct jsonbuf *out, struct errinfo *err)
{
    unsigned char open[JSON_COMPACT_DEPTH]; /* '{' or '[' of each open container */
    enum scan_state state = WANT_VALUE;
    size_t depth = 0, i = skip_ws(text, len, 0), end, at;
    struct copier cp = {.text = text, .from = i, .out = out, .err = err};
    const char *why = NULL;
    int first;

    if (i >= len)
        return bad(err, i, "no value (the text is empty or only whitespace)");
    first = (unsigned char)text[i];
    for (;;) {
        char c, close;

        if (state == AFTER_VALUE && depth == 0) {
            size_t value_end = i;

            i = skip_ws(text, len, i);
            if (i != len)
                return bad(err, i, "more text after the value");
            jsonbuf_put(out, text + cp.from, value_end - cp.from, err);
            return out->failed ? -1 : first;
        }
        i = skip(&cp, len, i);
        if (i >= len)
            return bad(err, i,
                       depth ? "the text ends inside an object or array"
                             : "the text ends where a value should be");
        c = text[i];
        close = depth && open[depth - 1] == '{' ? '}' : ']';
        switch (state) {
        case WANT_VALUE:
            if (c == '{' || c == '[') {
                if (depth == JSON_COMPACT_DEPTH)
                    return bad(err, i, "nested more than 1000 levels deep");
                open[depth++] = (unsigned char)c;
                i = skip(&cp, len, i + 1);
                if (i < len && text[i] == (c == '{' ? '}' : ']')) {
                    i++;
                    depth--;
                    state = AFTER_VALUE;
                } else {
                    state = c == '{' ? WANT_KEY : WANT_VALUE;
                }
                continue;
            }
            end = scan_scalar(text, len, i, &why, &at);
            if (!end)
                return bad(err, at, why);
            i = end;
            state = AFTER_VALUE;
            continue;
        case WANT_KEY:
            if (c != '"')
                return bad(err, i, "expected a member name (a string in double quotes)");
            end = scan_string(text, len, i, &why, &at);
            if (!end)
                return bad(err, at, why);
            i = skip(&cp, len, end);
            if (i >= len || text[i] != ':')
                return bad(err, i, "expected ':' after a member name");
            i++;
            state = WANT_VALUE;
            continue;
        case AFTER_VALUE:
            if (c == ',') {
                i++;
                state = open[depth - 1] == '{' ? WANT_KEY : WANT_VALUE;
            } else if (c == close) {
                i++;
                depth--;
            } else {
                return bad(err, i, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
            }
            continue;
        }
    }
}
