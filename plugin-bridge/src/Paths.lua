-- Paths.lua - instance paths: "Workspace.Model.Part", an optional "game." prefix, and bracket
-- quoting for names that are not plain identifiers: Workspace["a.b"].Part, game["My Folder"].
-- Inside brackets the name is a double- or single-quoted string; \" \' and \\ escape.
--
-- Paths.resolve(game, path) returns the Instance or raises an error a model can act on: it names
-- the segment that did not resolve and lists (up to 20) names that do exist there.
-- Paths.format(inst) is the inverse: the shortest path that resolve() accepts (without "game.";
-- the DataModel itself is "game"). Two siblings with the same name cannot be told apart by a
-- path: resolve() picks the first, as FindFirstChild does.
--
-- Written in the Lua 5.1 subset of Luau (runs unchanged under lua5.1 for the tests).

local Paths = {}

local MAX_LISTED = 20

local function isIdentifier(name)
	return name:match("^[%a_][%w_]*$") ~= nil
end

-- Quotes one name as a path segment: ".Name" or ["Name with.dots"].
function Paths.segment(name, first)
	if isIdentifier(name) then
		if first then
			return name
		end
		return "." .. name
	end
	local escaped = name:gsub("\\", "\\\\"):gsub("\"", "\\\"")
	return "[\"" .. escaped .. "\"]"
end

-- Splits a path into its names. Returns the list, or nil and a message.
function Paths.parse(path)
	if type(path) ~= "string" then
		return nil, "path must be a string like \"Workspace.Model.Part\""
	end
	path = path:match("^%s*(.-)%s*$") -- stray spaces around a pasted path
	local names = {}
	local i = 1
	local n = #path
	local expectName = true
	while i <= n do
		local c = path:sub(i, i)
		if c == "[" then
			local q = path:sub(i + 1, i + 1)
			if q ~= "\"" and q ~= "'" then
				return nil, "bad path \"" .. path .. "\" at character " .. i
					.. ": a bracket must hold a quoted name, like Workspace[\"a.b\"]"
			end
			local j = i + 2
			local buf = {}
			local closed = false
			while j <= n do
				local d = path:sub(j, j)
				if d == "\\" then
					table.insert(buf, path:sub(j + 1, j + 1))
					j = j + 2
				elseif d == q then
					closed = true
					break
				else
					table.insert(buf, d)
					j = j + 1
				end
			end
			if not closed or path:sub(j + 1, j + 1) ~= "]" then
				return nil, "bad path \"" .. path .. "\": unterminated bracket name starting at character " .. i
			end
			table.insert(names, table.concat(buf))
			i = j + 2
			expectName = false
		elseif c == "." then
			if expectName then
				return nil, "bad path \"" .. path .. "\": empty name at character " .. i
			end
			i = i + 1
			expectName = true
			if path:sub(i, i) == "[" then
				-- Workspace.["x"] is accepted as Workspace["x"]
				expectName = false
			end
		else
			if not expectName then
				return nil, "bad path \"" .. path .. "\": expected \".\" or \"[\" at character " .. i
			end
			local j = i
			while j <= n do
				local d = path:sub(j, j)
				if d == "." or d == "[" then
					break
				end
				j = j + 1
			end
			table.insert(names, path:sub(i, j - 1))
			i = j
			expectName = false
		end
	end
	if expectName and #names > 0 then
		return nil, "bad path \"" .. path .. "\": it ends with \".\""
	end
	return names
end

local function listNames(parent)
	local names = {}
	local children = parent:GetChildren()
	for i = 1, math.min(#children, MAX_LISTED) do
		names[i] = Paths.segment(children[i].Name, true)
	end
	local text = table.concat(names, ", ")
	if #children == 0 then
		return "it has no children"
	end
	if #children > MAX_LISTED then
		text = text .. " (and " .. (#children - MAX_LISTED) .. " more)"
	end
	return "its children are: " .. text
end

-- Resolves a path to an Instance of game; raises an error naming the failing segment.
function Paths.resolve(game, path)
	local names, err = Paths.parse(path)
	if not names then
		error(err, 0)
	end
	local cur = game
	local start = 1
	if names[1] == "game" then
		start = 2
	end
	for k = start, #names do
		local name = names[k]
		local found = cur:FindFirstChild(name)
		if not found and cur == game then
			if name == "workspace" then
				found = game:FindFirstChild("Workspace")
			end
			if not found then
				local ok, svc = pcall(function()
					return game:GetService(name)
				end)
				if ok and svc then
					found = svc
				end
			end
		end
		if not found then
			local where = cur == game and "game" or Paths.format(cur)
			error("path \"" .. path .. "\" does not resolve: " .. where .. " has no child named \"" .. name
				.. "\" (segment " .. (k - start + 1) .. "); " .. listNames(cur), 0)
		end
		cur = found
	end
	return cur
end

-- Like resolve, but a missing path gives nil instead of an error.
function Paths.find(game, path)
	local ok, inst = pcall(Paths.resolve, game, path)
	if ok then
		return inst
	end
	return nil
end

-- The path of an Instance, e.g. Workspace.Model["a.b"]; "game" for the DataModel.
function Paths.format(inst)
	local parts = {}
	local cur = inst
	while cur and cur.Parent ~= nil do
		table.insert(parts, 1, cur.Name)
		cur = cur.Parent
	end
	if #parts == 0 then
		if inst.ClassName == "DataModel" then
			return "game"
		end
		-- an Instance outside the DataModel (e.g. parented to nil): its own name
		return Paths.segment(inst.Name, true)
	end
	local out = { Paths.segment(parts[1], true) }
	for k = 2, #parts do
		table.insert(out, Paths.segment(parts[k], false))
	end
	return table.concat(out)
end

return Paths
