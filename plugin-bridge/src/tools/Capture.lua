-- tools/Capture.lua - capture_screenshot: the active window's 3D viewport through
-- StudioCaptureService (plugin security, Studio only). The answer is
--   {format = "png"|"rgba8", width, height, originalWidth, originalHeight, data = base64}
-- and runboxd makes it a PNG (RGBA8 pixels are encoded there) and MCP image content.
-- Only the window in front can capture (CanCaptureScreenshot is false in any other DataModel),
-- so during a play test the edit window, where Runbox's calls go, cannot: the error says so.

local U = require(script.Parent.Util)

local WAIT_MAX = 20 -- seconds a capture may stay Pending

local function bufferBytes(buf)
	if type(buf) == "string" then
		return buf
	end
	return buffer.tostring(buf) -- Luau's buffer library
end

local function errorsOf(cap)
	local ok, list = pcall(function()
		return cap:GetErrors()
	end)
	local parts = {}
	if ok and type(list) == "table" then
		for _, e in ipairs(list) do
			table.insert(parts, tostring(e))
		end
	end
	return #parts > 0 and table.concat(parts, "; ") or "no reason given"
end

local T = {}

T.capture_screenshot = {
	readOnly = true,
	run = function(args, ctx)
		local maxSize = U.int(args, "max_size", 1024, 64, 4096)
		local okS, scs = pcall(U.svc, ctx, "StudioCaptureService")
		if not okS or scs == nil then
			error("this Studio has no StudioCaptureService (update Studio); screenshots need it", 0)
		end
		if not scs:CanCaptureScreenshot() then
			local okP, granted = pcall(function()
				return scs:RequestScreenshotPermissionAsync()
			end)
			if not okP or not granted then
				error("Studio did not allow screenshots" .. (okP and "" or (": " .. tostring(granted)))
					.. "; allow them when Studio asks (call capture_screenshot again to be asked again)", 0)
			end
			if not scs:CanCaptureScreenshot() then
				error("Studio cannot capture this window now: only the window in front can (during a play test"
					.. " that is the test's window, and Runbox's calls go to the edit window); bring the place's"
					.. " edit window to the front, or stop the test", 0)
			end
		end
		local options = {}
		local okF, png = pcall(function()
			return Enum.StudioCaptureScreenshotFormat.PNG
		end)
		if okF and png then
			options.Format = png
		end
		local okC, cap = pcall(function()
			return scs:CaptureScreenshot(options)
		end)
		if not okC then
			error("Studio could not capture: " .. tostring(cap), 0)
		end
		local waited = 0
		while cap.BufferStatus.Name == "NotStarted" or cap.BufferStatus.Name == "Pending" do
			if waited >= WAIT_MAX then
				error("Studio's capture was still pending after " .. WAIT_MAX .. " s", 0)
			end
			waited = waited + task.wait()
		end
		if cap.BufferStatus.Name ~= "Ready" then
			error("Studio could not capture: " .. errorsOf(cap), 0)
		end
		local original = cap.Resolution
		local out = { originalWidth = math.floor(original.X), originalHeight = math.floor(original.Y) }
		local long = math.max(original.X, original.Y)
		if long > maxSize then
			local k = maxSize / long
			local size = Vector2.new(math.max(1, math.floor(original.X * k)), math.max(1, math.floor(original.Y * k)))
			local okZ, zerr = pcall(function()
				cap:ScaleAsync(Enum.ResamplerMode.Default, size)
			end)
			if not okZ then
				out.note = "not scaled to max_size=" .. maxSize .. " (" .. tostring(zerr) .. "): the picture is"
					.. " the viewport's own size"
			end
		end
		local res = cap.Resolution
		out.width, out.height = math.floor(res.X), math.floor(res.Y)
		out.format = cap.BufferFormat.Name == "PNG" and "png" or "rgba8"
		out.data = U.base64(bufferBytes(cap:GetBuffer()), function()
			task.wait()
		end)
		return out
	end,
}

return T
