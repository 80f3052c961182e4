"""The console's page: index.html, console.js and console.css, read with importlib.resources (shipped in the wheel)."""
